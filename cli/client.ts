import type { z } from 'zod';
import { schemeMismatch, untrustedReason } from '../agent/https.js';
import { makeDiagnostic, type Diagnostic, messageOf } from '../core/diagnostics/index.js';
import { records } from './records.js';
import { ExitError, fail } from './exit.js';

export interface ClientOptions {
  server: string;
  token?: string;
  nextRequestId(): string;
  fetch?: typeof fetch;
  /** Per request, except watches. */
  timeoutMs?: number;
  /** Ctrl-C: ends every request in flight. */
  signal?: AbortSignal;
}

export interface WatchBatch {
  revision: number;
  events: { type: 'put' | 'delete'; kv: { key: string; value: string; modRevision: number } }[];
}

/** One request that was sent, and what came of it: the bundle's evidence. */
export interface SentRequest {
  requestId: string;
  method: string;
  path: string;
  status?: number;
  diagnostics?: Diagnostic[];
}

const isDiagnostic = (v: unknown): v is Diagnostic =>
  typeof v === 'object' && v !== null && typeof (v as Diagnostic).code === 'string' && typeof (v as Diagnostic).message === 'string';

/** The API over HTTP: every request carries a fresh X-Request-Id; every failure becomes coded diagnostics. */
export class Client {
  readonly sent: SentRequest[] = [];
  private readonly fetch: typeof fetch;

  constructor(readonly opts: ClientOptions) {
    this.fetch = opts.fetch ?? globalThis.fetch;
  }

  get server(): string {
    return this.opts.server.replace(/\/+$/, '');
  }

  /** A JSON request whose answer must fit `schema` (else CCA-E0708, the server's fault). */
  async json<S extends z.ZodType>(method: string, path: string, schema: S, body?: unknown): Promise<z.output<S>> {
    const { res, requestId, record } = await this.send(method, path, body);
    const text = await res.text();
    const parsed = parseJson(text);
    if (!res.ok || parsed === undefined) throw this.failure(method, path, res.status, parsed, text, requestId, record);
    const r = schema.safeParse(parsed);
    if (r.success) return r.data;
    const issue = r.error.issues[0]!;
    const d = makeDiagnostic('CCA-E0708', {
      method,
      url: `${this.server}${path}`,
      status: res.status,
      reason: `${issue.path.length ? `at ${issue.path.join('.')}: ` : ''}${issue.message}`,
    });
    d.requestId = requestId;
    record.diagnostics = [d];
    throw new ExitError([d]);
  }

  async text(path: string): Promise<string> {
    const { res, requestId, record } = await this.send('GET', path);
    const text = await res.text();
    if (res.ok) return text;
    throw this.failure('GET', path, res.status, parseJson(text), text, requestId, record);
  }

  /** A streamed answer's body (a replica's logs); a refusal is thrown as its coded diagnostics. */
  async stream(path: string, signal: AbortSignal): Promise<{ body: ReadableStream<Uint8Array>; requestId: string }> {
    const { res, requestId, record } = await this.send('GET', path, undefined, signal, false);
    if (res.ok && res.body) return { body: res.body, requestId };
    const text = await res.text();
    throw this.failure('GET', path, res.status, parseJson(text), text, requestId, record);
  }

  /**
   * The store's watch as batches, from `from` (inclusive); ends when `signal` aborts. A
   * stream that ends or a server that stops answering (a pod restarting or shutting down,
   * a load balancer moving us) is resumed from the revision after the last batch, with
   * backoff, for up to WATCH_RESUME_MS of outage: nothing is missed or doubled. Errors the
   * server states (compacted, not allowed) end the watch at once.
   */
  async *watch(prefix: string, from: number | undefined, signal: AbortSignal): AsyncGenerator<WatchBatch> {
    let next = from;
    let outageSince: number | undefined;
    let delay = 200;
    for (;;) {
      try {
        const connected = () => {
          outageSince = undefined;
          delay = 200;
        };
        for await (const batch of this.watchOnce(prefix, next, signal, connected)) {
          next = batch.revision + 1;
          yield batch;
        }
        return;
      } catch (e) {
        if (signal.aborted) return;
        if (!resumable(e)) throw e;
        outageSince ??= Date.now();
        if (Date.now() - outageSince > WATCH_RESUME_MS) throw e;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        });
        delay = Math.min(delay * 2, 5_000);
      }
    }
  }

  private async *watchOnce(prefix: string, from: number | undefined, signal: AbortSignal, connected: () => void): AsyncGenerator<WatchBatch> {
    const q = new URLSearchParams({ prefix });
    if (from !== undefined) q.set('from', String(from));
    const path = `/v1/watch?${q}`;
    const { res, requestId, record } = await this.send('GET', path, undefined, signal, false);
    if (!res.ok || !res.body) {
      const text = await res.text();
      throw this.failure('GET', path, res.status, parseJson(text), text, requestId, record);
    }
    connected();
    const broke = (reason: string): never => fail('CCA-E0713', { url: this.server, reason }, requestId);
    for await (const frame of records(res.body, '\n\n', signal, broke, true)) {
      let event = 'message';
      let data = '';
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).replace(/^ /, '');
      }
      if (event === 'batch') yield JSON.parse(data) as WatchBatch;
      else if (event === 'error') {
        const body = JSON.parse(data) as { error?: unknown };
        const d = isDiagnostic(body.error) ? body.error : makeDiagnostic('CCA-E0713', { url: this.server, reason: data });
        record.diagnostics = [d];
        throw new ExitError([{ ...d, requestId }]);
      }
    }
    if (signal.aborted) return;
    broke('the server closed it');
  }

  private async send(method: string, path: string, body?: unknown, signal?: AbortSignal, timeout = true) {
    const requestId = this.opts.nextRequestId();
    const record: SentRequest = { requestId, method, path };
    this.sent.push(record);
    const headers: Record<string, string> = { 'x-request-id': requestId, accept: 'application/json' };
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const signals = [signal, this.opts.signal, timeout ? AbortSignal.timeout(this.opts.timeoutMs ?? 30_000) : undefined].filter((s): s is AbortSignal => s !== undefined);
    const url = `${this.server}${path}`;
    let res: Response;
    try {
      res = await this.fetch(url, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
      });
    } catch (e) {
      const untrusted = untrustedReason(e);
      const d = untrusted
        ? makeDiagnostic('CCA-E0740', { url: this.server, reason: untrusted })
        : makeDiagnostic('CCA-E0701', { url: this.server, reason: schemeMismatch(e, this.server) ?? networkReason(e) });
      d.requestId = requestId;
      record.diagnostics = [d];
      throw new ExitError([d]);
    }
    record.status = res.status;
    return { res, requestId, record };
  }

  private failure(method: string, path: string, status: number, parsed: unknown, text: string, requestId: string, record: SentRequest): ExitError {
    const body = parsed as { error?: unknown; diagnostics?: unknown } | undefined;
    let ds: Diagnostic[];
    if (Array.isArray(body?.diagnostics) && body.diagnostics.every(isDiagnostic)) ds = body.diagnostics;
    else if (isDiagnostic(body?.error)) ds = [body.error];
    else {
      const reason = parsed === undefined ? `not JSON (${JSON.stringify(text.slice(0, 60))})` : 'no coded error in it';
      ds = [makeDiagnostic('CCA-E0708', { method, url: `${this.server}${path}`, status, reason })];
    }
    ds = ds.map((d) => ({ ...d, requestId: d.requestId ?? requestId }));
    record.diagnostics = ds;
    return new ExitError(ds);
  }
}

/** An answer's body as JSON, or undefined when it is not JSON (a proxy's page, a cut body). */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** How long a watch keeps trying to resume before it gives up with the last error. */
export const WATCH_RESUME_MS = 60_000;

/**
 * A stream cut (by the network, or by the server at a watcher's byte bound: CCA-E0640/E0641),
 * a server not answering, a pod that is unavailable or shutting down, or too many streams
 * for our token right now (CCA-E0642): worth another try, from the revision after the last
 * batch we got.
 */
const RESUMABLE = new Set(['CCA-E0713', 'CCA-E0701', 'CCA-E0663', 'CCA-E0610', 'CCA-E0640', 'CCA-E0641', 'CCA-E0642']);

function resumable(e: unknown): boolean {
  if (!(e instanceof ExitError)) return false;
  return e.diagnostics.some((d) => RESUMABLE.has(d.code));
}

/** "fetch failed" says nothing; its cause (ECONNREFUSED, ENOTFOUND, a timeout) does. */
function networkReason(e: unknown): string {
  if (e instanceof DOMException && (e.name === 'TimeoutError' || e.name === 'AbortError')) return e.name === 'TimeoutError' ? 'no answer in time' : 'interrupted';
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}${cause.message && !cause.message.includes(cause.code) ? ` (${cause.message})` : ''}`;
  if (cause?.message) return cause.message;
  return messageOf(e);
}
