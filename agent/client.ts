import { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { makeDiagnostic, messageOf, type Diagnostic } from '../core/diagnostics/index.js';
import { ServerError, UnreachableError } from './core/errors.js';
import type { AssignmentsAnswer, ObservedVolume, Registration } from './core/ports.js';
import { schemeMismatch, untrustedReason } from './https.js';
import { requestSignal } from './request-signal.js';
import { QUORUM } from '../core/model/quorum.js';
import { networkBundleSchema, type NetworkBundle } from '../core/model/network.js';
import type { NodeEvent, NodeRecordInput, Observation, VolumeRecord } from '../core/model/index.js';

export { ServerError, UnreachableError } from './core/errors.js';

/** One page of the agent API's network answer (`/v1/agent/nodes/<node>/network`). */
const networkPageSchema = networkBundleSchema.extend({ revision: z.int().min(0), changed: z.boolean(), more: z.boolean().optional(), cursor: z.string().optional() });

export type { AssignmentsAnswer, ObservedVolume, Registration } from './core/ports.js';

/** How long an enrollment may take to answer (a loaded pod took 9 s: docs/benchmarks.md, soak). */
const ENROLL_TIMEOUT_MS = 60_000;

/** The agent API client: exactly the routes of `/v1/agent/...`, nothing else. */
export class AgentClient {
  private current = '';
  /** Bumped whenever the credential changes, so an answer can be matched to the credential it was asked with. */
  generation = 0;
  private readonly aborter = new AbortController();

  get credential(): string {
    return this.current;
  }

  set credential(value: string) {
    if (value === this.current) return;
    this.current = value;
    this.generation++;
  }

  constructor(
    private readonly server: string,
    private readonly node: string,
    private readonly timeoutMs = 5_000,
    /** The global fetch, or one trusting the agent's --ca (agent/https.ts). */
    private readonly fetch: typeof globalThis.fetch = globalThis.fetch,
  ) {}

  /**
   * Waits at least ENROLL_TIMEOUT_MS: the server issues a node's credential once (a second
   * enrollment is refused, CCA-E0630), so an answer given up on strands the node until an
   * admin resets it, while waiting longer costs nothing but this one call's time.
   */
  async enroll(joinToken: string): Promise<string> {
    const r = await this.call<{ credential: string }>('POST', '/v1/agent/enroll', { node: this.node }, { token: joinToken, timeoutMs: Math.max(this.timeoutMs, ENROLL_TIMEOUT_MS) });
    this.credential = r.credential;
    return r.credential;
  }

  register(record: NodeRecordInput, leaseTtlSeconds: number, resumeLease?: number): Promise<Registration> {
    return this.call('POST', this.path('register'), { ...record, leaseTtlSeconds, ...(resumeLease === undefined ? {} : { resumeLease }) });
  }

  /** Timed out after QUORUM.keepaliveTimeoutMs (D): the quorum's safety argument counts on it (docs/fencing.md). */
  keepalive(lease: number): Promise<{ ttl: number }> {
    return this.call('POST', this.path('keepalive'), { lease }, { timeoutMs: QUORUM.keepaliveTimeoutMs });
  }

  /**
   * The node's assignments, long-polled. A large answer comes in pages bounded in bytes
   * (`more` and `cursor`): the later pages are read at once, at the first page's revision, and
   * the core gets them whole.
   */
  async assignments(after: number, waitMs: number): Promise<AssignmentsAnswer> {
    type Page = AssignmentsAnswer & { more?: boolean; cursor?: string };
    const first = await this.call<Page>('GET', `${this.path('assignments')}?after=${after}&waitMs=${waitMs}`, undefined, { timeoutMs: waitMs + this.timeoutMs });
    const assignments = [...first.assignments];
    let page = first;
    while (page.more && page.cursor !== undefined) {
      page = await this.call<Page>('GET', `${this.path('assignments')}?after=${after}&waitMs=0&revision=${first.revision}&cursor=${encodeURIComponent(page.cursor)}`);
      assignments.push(...page.assignments);
    }
    const { more: _more, cursor: _cursor, ...answer } = first;
    return { ...answer, assignments };
  }

  /**
   * What the node needs to police its replicas (its rule set, its policed services' policies,
   * the address sets they name), long-polled: answers at once when any of it changed after
   * `after`. Later pages are read at once, at the first page's revision; the bundle comes whole.
   */
  async network(after: number, waitMs: number): Promise<{ revision: number; changed: boolean; bundle: NetworkBundle }> {
    const page = (raw: unknown) => networkPageSchema.parse(raw);
    const first = page(await this.call('GET', `${this.path('network')}?after=${after}&waitMs=${waitMs}`, undefined, { timeoutMs: waitMs + this.timeoutMs }));
    const bundle: NetworkBundle = { rules: first.rules, policies: [...first.policies], addresses: [...first.addresses] };
    let last = first;
    while (last.more === true && last.cursor !== undefined) {
      last = page(await this.call('GET', `${this.path('network')}?after=${after}&waitMs=0&revision=${first.revision}&cursor=${encodeURIComponent(last.cursor)}`));
      bundle.policies.push(...last.policies);
      bundle.addresses.push(...last.addresses);
    }
    return { revision: first.revision, changed: first.changed, bundle };
  }

  observations(tenure: number, observations: Observation[]): Promise<{ revision: number }> {
    return this.call('POST', this.path('observations'), { tenure, observations });
  }

  events(tenure: number, events: NodeEvent[]): Promise<{ revision: number }> {
    return this.call('POST', this.path('events'), { tenure, events });
  }

  /**
   * The volumes the storage controller wants on this node (`/volumes/<node>/`): at once with
   * `after` 0, else long-polled (answers when they changed after `after`, or after `waitMs`).
   */
  volumes(after = 0, waitMs = 0): Promise<{ revision: number; changed?: boolean; volumes: VolumeRecord[] }> {
    return this.call('GET', `${this.path('volumes')}?after=${after}&waitMs=${waitMs}`, undefined, { timeoutMs: waitMs + this.timeoutMs });
  }

  /** Report the node's volumes; the server deletes reports of volumes not in the list. */
  observedVolumes(tenure: number, volumes: ObservedVolume[]): Promise<{ revision: number }> {
    return this.call('POST', this.path('observed-volumes'), { tenure, volumes });
  }

  /** Log requests for this node's replicas, long-polled (agent/log-server.ts). */
  logRequests(waitMs: number): Promise<{ requests: unknown[] }> {
    return this.call('GET', `${this.path('log-requests')}?waitMs=${waitMs}`, undefined, { timeoutMs: waitMs + this.timeoutMs });
  }

  /**
   * Answer a log request with a stream of frames; resolves when the server is done with it
   * (the output ended, or its client went away: then the server cuts the upload).
   */
  async logStream(id: string, body: ReadableStream<Uint8Array>, signal: AbortSignal): Promise<void> {
    const url = `${this.server.replace(/\/$/, '')}${this.path(`log-requests/${id}/stream`)}`;
    const scope = requestSignal(undefined, [signal, this.aborter.signal]);
    let res: Response;
    let parsed: { error?: Diagnostic } | undefined;
    try {
      try {
        res = await this.fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.credential}`, 'content-type': 'application/x-ndjson', 'x-request-id': randomUUID() },
          body,
          // Node's fetch streams a request body only when told it may answer before the body ends.
          duplex: 'half',
          signal: scope.signal,
        } as RequestInit);
      } catch (e) {
        throw new UnreachableError(url, (e as { cause?: { code?: string } }).cause?.code ?? messageOf(e));
      }
      parsed = (await res.json().catch(() => undefined)) as { error?: Diagnostic } | undefined;
    } finally {
      scope.done();
    }
    if (!res.ok) throw new ServerError(res.status, parsed?.error?.code ? parsed.error : makeDiagnostic('CCA-E0505', { url, reason: `HTTP ${res.status} without a coded error` }));
  }

  /** Aborted when the client is abandoned (abort()): every request in flight ends with it. */
  get lifetime(): AbortSignal {
    return this.aborter.signal;
  }

  /** Abandon every request in flight (the agent is shutting down). */
  abort(): void {
    this.aborter.abort();
  }

  private path(what: string): string {
    return `/v1/agent/nodes/${encodeURIComponent(this.node)}/${what}`;
  }

  private async call<T>(method: string, path: string, body?: unknown, opts: { token?: string; timeoutMs?: number } = {}): Promise<T> {
    const url = this.server.replace(/\/$/, '') + path;
    const generation = opts.token === undefined ? this.generation : undefined;
    // The deadline covers the answer's body too; the scope ends however the request does.
    const scope = requestSignal(opts.timeoutMs ?? this.timeoutMs, [this.aborter.signal]);
    let res: Response;
    let parsed: unknown;
    try {
      try {
        res = await this.fetch(url, {
          method,
          headers: { authorization: `Bearer ${opts.token ?? this.credential}`, 'content-type': 'application/json', 'x-request-id': randomUUID() },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: scope.signal,
        });
      } catch (e) {
        const untrusted = untrustedReason(e);
        if (untrusted) throw new UnreachableError(this.server, untrusted, 'CCA-E0540');
        const cause = (e as { cause?: { code?: string } }).cause?.code;
        throw new UnreachableError(url, schemeMismatch(e, url) ?? cause ?? messageOf(e));
      }
      try {
        parsed = await res.json();
      } catch (e) {
        if (res.ok) throw new UnreachableError(url, `unreadable answer: ${messageOf(e)}`);
      }
    } finally {
      scope.done();
    }
    if (res.ok) return parsed as T;
    const d = (parsed as { error?: Diagnostic } | undefined)?.error;
    const coded = d?.code ? d : makeDiagnostic('CCA-E0505', { url, reason: `HTTP ${res.status} without a coded error` });
    // Retry-After in seconds (RFC 9110) when the body does not say it more precisely.
    const after = Number(res.headers.get('retry-after') ?? NaN);
    if (res.status === 429 && coded.params.retryAfterMs === undefined && Number.isFinite(after) && after >= 0) coded.params = { ...coded.params, retryAfterMs: after * 1000 };
    throw new ServerError(res.status, coded, generation);
  }
}
