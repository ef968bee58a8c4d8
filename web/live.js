// Live mode: list once at one revision into a local mirror, then follow the store's watch
// from the next revision, applying each batch in order,
// the way an agent follows its assignments. On a dropped stream: reconnect with backoff,
// resume with Last-Event-ID = the last applied revision (nothing missed, nothing doubled);
// a compacted start means list again.
import { Mirror } from './mirror.js';
import { readEvents } from './sse.js';
import { ChangeFeed } from './feed.js';

/** The facts the views read. Everything else in the watch is skipped. */
export const PREFIXES = ['/services/', '/replicas/', '/assigned/', '/observed/', '/nodes/', '/node-status/', '/allocations/', '/autoscale/', '/rollouts/', '/lost/'];
const TOKEN_KEY = 'cca-token';
const IDLE_MS = 40_000; // the server sends a heartbeat every 15 s
const BACKOFF = [500, 1_000, 2_000, 4_000, 8_000];
/**
 * How long one read (a page of the listing, /readyz, a `why`) may take. A request the server
 * accepted and never answered (a stuck pod, a connection cut without a reset) would otherwise
 * keep the console "connecting…" for good; past this it fails and the loop's backoff retries.
 */
export const REQUEST_MS = 30_000;

export const keep = (key) => PREFIXES.some((p) => key.startsWith(p));

export class AuthNeeded extends Error {}

export class LiveSource {
  constructor({ onChange, onState }) {
    this.onChange = onChange;
    this.onState = onState;
    this.mirror = null;
    this.revision = 0;
    this.attempt = 0;
    this.staleSince = undefined;
    this.stopped = false;
    /**
     * Every watch batch as it is applied, whole (decisions and events too, which the mirror
     * does not keep), stamped with when it arrived; a reset after each listing (web/feed.js).
     */
    this.feed = new ChangeFeed();
  }

  get token() {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  }

  setToken(t) {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  }

  headers(extra = {}) {
    const t = this.token;
    return { ...extra, ...(t ? { authorization: `Bearer ${t}` } : {}) };
  }

  now() {
    return Date.now();
  }

  async getJson(path, signal) {
    // A timer of the page's (not AbortSignal.timeout) so a test's fake clock can move it.
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), REQUEST_MS);
    const cancel = () => ac.abort();
    signal?.addEventListener('abort', cancel, { once: true });
    let r;
    let body;
    try {
      r = await fetch(path, { headers: this.headers({ accept: 'application/json' }), cache: 'no-store', signal: ac.signal });
      body = await r.json().catch((e) => {
        if (ac.signal.aborted) throw e; // cut mid-body: not an answer without one
        return {};
      });
    } catch (e) {
      if (ac.signal.aborted && !signal?.aborted) throw new Error(`${path.split('?')[0]} did not answer within ${REQUEST_MS / 1000} s`);
      throw e;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
    }
    if (r.status === 401 || r.status === 403) throw new AuthNeeded(body.error?.message ?? 'this server needs a token to read');
    if (!r.ok) throw Object.assign(new Error(body.error ? `${body.error.code} ${body.error.message}` : `HTTP ${r.status}`), { code: body.error?.code });
    return body;
  }

  async why(kind, name) {
    return this.getJson(`/v1/why/${kind}/${encodeURIComponent(name)}`);
  }

  /** Every fact the views need, at one revision, paged. */
  async list() {
    let revision = 0;
    const kvs = [];
    for (const prefix of PREFIXES) {
      let after;
      do {
        const q = new URLSearchParams({ prefix, revision: String(revision), limit: '1000', ...(after ? { after } : {}) });
        const page = await this.getJson(`/v1/state?${q}`);
        revision = page.revision;
        kvs.push(...page.kvs);
        after = page.more ? page.kvs.at(-1)?.key : undefined;
      } while (after);
    }
    this.mirror = new Mirror(revision, kvs);
    this.revision = revision;
    this.listings = (this.listings ?? 0) + 1;
    this.feed.reset();
  }

  start() {
    void this.loop();
  }

  stop() {
    this.stopped = true;
    this.abort?.abort();
  }

  /** List again from scratch (new credentials). */
  reload() {
    this.mirror = null;
    this.relist = true;
    this.abort?.abort();
    this.skipWait?.();
  }

  /** Reconnect at once (the "retry now" button). */
  retryNow() {
    this.skipWait?.();
  }

  async loop() {
    while (!this.stopped) {
      let reason;
      try {
        if (!this.mirror) {
          this.relist = false;
          this.state({ state: 'connecting' });
          await this.list();
          this.onChange();
        }
        await this.follow();
        reason = 'the stream ended';
      } catch (e) {
        if (e instanceof AuthNeeded) {
          this.state({ state: 'auth', message: e.message });
          await this.wait(Infinity);
          continue;
        }
        if (e?.code === 'CCA-E0101') {
          // Our revision was compacted away: list again, then watch from there.
          this.mirror = null;
          continue;
        }
        reason = e?.message ?? String(e);
      }
      if (this.stopped) return;
      if (this.relist) {
        this.relist = false;
        continue;
      }
      this.staleSince ??= Date.now();
      const delay = BACKOFF[Math.min(this.attempt++, BACKOFF.length - 1)];
      await this.wait(delay, reason);
    }
  }

  /** Wait `ms` showing a countdown; `retryNow()` or a new token ends it early. */
  wait(ms, reason) {
    return new Promise((resolve) => {
      const until = Date.now() + ms;
      const tick = () => {
        if (Number.isFinite(ms)) this.state({ state: 'reconnecting', inMs: Math.max(0, until - Date.now()), staleSince: this.staleSince, reason });
      };
      tick();
      const timer = setInterval(tick, 250);
      const done = () => {
        clearInterval(timer);
        clearTimeout(t);
        this.skipWait = undefined;
        resolve();
      };
      const t = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      this.skipWait = done;
    });
  }

  async follow() {
    // A store that went back in time (a fresh one behind the same address) would leave us
    // waiting for revisions it will reuse: list again instead.
    const ready = await this.getJson('/readyz').catch(() => undefined);
    if (ready && typeof ready.revision === 'number' && ready.revision < this.revision) {
      this.mirror = null;
      throw Object.assign(new Error(`the store is at revision ${ready.revision}, behind ours (${this.revision})`), { code: 'CCA-E0101' });
    }
    const ac = new AbortController();
    this.abort = ac;
    let idle;
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => ac.abort(), IDLE_MS);
    };
    touch();
    try {
      const q = new URLSearchParams({ prefix: '/', from: String(this.revision + 1) });
      const r = await fetch(`/v1/watch?${q}`, {
        headers: this.headers({ accept: 'text/event-stream', 'last-event-id': String(this.revision) }),
        cache: 'no-store',
        signal: ac.signal,
      });
      if (r.status === 401 || r.status === 403) throw new AuthNeeded('this server needs a token to read');
      if (!r.ok || !r.body) throw new Error(`watch answered HTTP ${r.status}`);
      for await (const ev of readEvents(r.body, ac.signal)) {
        touch();
        if (ev.event === 'open') {
          this.attempt = 0;
          this.staleSince = undefined;
          this.state({ state: 'live' });
        } else if (ev.event === 'batch') {
          await this.apply(JSON.parse(ev.data));
        } else if (ev.event === 'error') {
          const d = JSON.parse(ev.data).error ?? {};
          throw Object.assign(new Error(`${d.code} ${d.message}`), { code: d.code });
        }
      }
    } finally {
      clearTimeout(idle);
      ac.abort();
    }
  }

  /** Every fact the views read, at the last applied revision (for the change feed's subscribers). */
  facts() {
    return this.mirror ? { revision: this.mirror.revision, kvs: this.mirror.kvs.values() } : undefined;
  }

  /** The facts as of the last applied revision, for the views. */
  get store() {
    return this.mirror?.snapshot();
  }

  /** One batch = one revision, applied once, in order; a batch already applied is skipped. */
  async apply(batch) {
    if (batch.revision <= this.revision) return;
    const relevant = batch.events.some((e) => keep(e.kv.key));
    this.mirror.apply(batch, keep);
    this.revision = batch.revision;
    this.feed.batch({ revision: batch.revision, events: batch.events, at: Date.now() });
    this.state({ state: 'live' });
    if (relevant) this.onChange();
  }

  state(s) {
    this.current = { ...s, revision: this.revision };
    this.onState(this.current);
  }
}
