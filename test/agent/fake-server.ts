import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { makeDiagnostic } from '../../core/diagnostics/index.js';
import { assignmentSchema, nodeRecordSchema, observationSchema, serviceSpecSchema, type Assignment, type NodeEvent, type NodeRecord, type Observation, type ServiceSpecInput } from '../../core/model/index.js';

/**
 * A small in-test stand-in for the agent API (`/v1/agent/...`) as the brief specifies it:
 * enrollment, registration on a lease (tenure = create revision of /nodes/<node>), keepalive,
 * long-polled assignments, observations and events refused from a lost tenure, 401/403.
 * Test levers: `partition` (connections dropped, like a cut proxy), `storeDown` (503 CCA-E0610).
 */
interface NodeState {
  record: NodeRecord;
  tenure: number;
  lease: number;
}

export class FakeAgentServer {
  revision = 0;
  partition = false;
  storeDown = false;
  readonly nodes = new Map<string, NodeState>();
  readonly leases = new Map<number, { node: string; ttl: number; expiresAt: number }>();
  readonly credentials = new Map<string, string>();
  readonly assigned = new Map<string, Map<string, Assignment>>();
  readonly observed = new Map<string, Observation>();
  readonly events: NodeEvent[] = [];
  /** Every lease expiry, with the time it happened (tests compare it with fence times). */
  readonly expiries: { node: string; tenure: number; at: number }[] = [];
  private lastChange = new Map<string, number>();
  private waiters = new Set<() => void>();
  private nextLease = 1;
  private nextCred = 1;
  private server: Server | undefined;
  private sockets = new Set<Socket>();
  private reaper: ReturnType<typeof setInterval> | undefined;

  constructor(readonly joinToken = 'join-secret') {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async listen(port = 0): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      if (this.partition) return void s.destroy();
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server!.listen(port, '127.0.0.1', r));
    this.reaper = setInterval(() => this.expireLeases(), 50);
  }

  async close(): Promise<void> {
    if (this.reaper) clearInterval(this.reaper);
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** Cut every connection now and refuse new ones until healed. */
  cut(on: boolean): void {
    this.partition = on;
    if (on) for (const s of this.sockets) s.destroy();
  }

  tenureOf(node: string): number | undefined {
    return this.nodes.get(node)?.tenure;
  }

  /** The scheduler's part: place a replica on a node under its current tenure. */
  assign(node: string, replica: string, spec: ServiceSpecInput, over: Partial<Assignment> = {}): Assignment {
    const s = serviceSpecSchema.parse(spec);
    const a = assignmentSchema.parse({ replica, service: s.name, node, tenure: this.tenureOf(node) ?? 0, resources: s.resources, specRevision: 1, spec: s, desired: 'run', placedAt: Date.now(), ...over });
    this.mapOf(node).set(replica, a);
    this.changed(node);
    return a;
  }

  /**
   * Place a spec the schema would refuse, as an older server, a direct store write or a bug
   * could: `hostile` replaces fields of the validated `spec`, and nothing checks the result
   * (test/security: the agent must not trust the model alone).
   */
  assignUnchecked(node: string, replica: string, spec: ServiceSpecInput, hostile: Record<string, unknown>, over: Record<string, unknown> = {}): Assignment {
    const s = serviceSpecSchema.parse(spec);
    // Deliberately not parsed: the point is an assignment no schema would let through.
    const a = { replica, service: s.name, node, tenure: this.tenureOf(node) ?? 0, resources: s.resources, specRevision: 1, spec: { ...s, ...hostile }, desired: 'run', placedAt: Date.now(), ...over } as Assignment;
    this.mapOf(node).set(replica, a);
    this.changed(node);
    return a;
  }

  unassign(node: string, replica: string): void {
    this.mapOf(node).delete(replica);
    this.changed(node);
  }

  /** How many times each replica's observation was written. */
  readonly reports = new Map<string, number>();

  observation(node: string, replica: string): Observation | undefined {
    return this.observed.get(`${node}/${replica}`);
  }

  private mapOf(node: string): Map<string, Assignment> {
    let m = this.assigned.get(node);
    if (!m) this.assigned.set(node, (m = new Map()));
    return m;
  }

  private changed(node: string): void {
    this.revision += 1;
    this.lastChange.set(node, this.revision);
    for (const w of this.waiters) w();
  }

  private expireLeases(): void {
    const now = Date.now();
    for (const [id, l] of this.leases) {
      if (l.expiresAt > now) continue;
      this.leases.delete(id);
      const n = this.nodes.get(l.node);
      if (n?.lease === id) {
        this.nodes.delete(l.node);
        this.revision += 1;
        this.expiries.push({ node: l.node, tenure: n.tenure, at: now });
      }
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.partition) return void req.socket.destroy();
    const send = (status: number, body: unknown) => {
      if (this.partition) return void req.socket.destroy();
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const fail = (status: number, code: string, params: Record<string, string | number> = {}) => send(status, { error: makeDiagnostic(code, params) });
    let body: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (chunks.length > 0) body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    if (this.storeDown) return fail(503, 'CCA-E0610', { reason: 'the store is unreachable' });
    const url = new URL(req.url ?? '/', 'http://x');
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (req.method === 'POST' && url.pathname === '/v1/agent/enroll') {
      if (token !== this.joinToken) return fail(401, 'CCA-E0605', { needs: 'a join token', got: 'another token' });
      // As the real server: a node's first credential only (issue 16).
      if (this.credentials.has(String(body.node))) return fail(409, 'CCA-E0630', { node: String(body.node), revision: 1 });
      const credential = `cred-${body.node}-${this.nextCred++}`;
      this.credentials.set(String(body.node), credential);
      return send(200, { node: body.node, credential });
    }
    const m = /^\/v1\/agent\/nodes\/([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!m) return fail(404, 'CCA-E0604', { method: req.method ?? '', path: url.pathname });
    const node = decodeURIComponent(m[1]!);
    const owner = [...this.credentials].find(([, c]) => c === token)?.[0];
    if (owner === undefined) return fail(401, 'CCA-E0605', { needs: 'a node credential', got: 'none' });
    if (owner !== node) return fail(403, 'CCA-E0606', { node: owner, action: `act for ${node}`, target: node });
    switch (m[2]) {
      case 'register':
        return send(200, this.register(node, body));
      case 'keepalive': {
        const l = this.leases.get(Number(body.lease));
        if (!l || l.node !== node || l.expiresAt <= Date.now()) return fail(404, 'CCA-E0107', { lease: Number(body.lease) });
        l.expiresAt = Date.now() + l.ttl * 1000;
        return send(200, { ttl: l.ttl });
      }
      case 'assignments':
        return send(200, await this.poll(node, Number(url.searchParams.get('after') ?? 0), Number(url.searchParams.get('waitMs') ?? 30_000)));
      case 'observations': {
        if (body.tenure !== this.tenureOf(node)) return fail(409, 'CCA-E0107', { lease: `of tenure ${String(body.tenure)}` });
        for (const o of body.observations as unknown[]) {
          const obs = observationSchema.parse(o);
          this.observed.set(`${node}/${obs.replica}`, obs);
          this.reports.set(obs.replica, (this.reports.get(obs.replica) ?? 0) + 1);
        }
        this.revision += 1;
        return send(200, { revision: this.revision });
      }
      case 'events':
        if (body.tenure !== this.tenureOf(node)) return fail(409, 'CCA-E0107', { lease: `of tenure ${String(body.tenure)}` });
        this.events.push(...(body.events as NodeEvent[]));
        this.revision += 1;
        return send(200, { revision: this.revision });
      default:
        return fail(404, 'CCA-E0604', { method: req.method ?? '', path: url.pathname });
    }
  }

  private register(node: string, body: Record<string, unknown>): { lease: number; ttl: number; tenure: number; revision: number } {
    const { leaseTtlSeconds, resumeLease, ...rest } = body;
    const record = nodeRecordSchema.parse(rest);
    const ttl = typeof leaseTtlSeconds === 'number' ? leaseTtlSeconds : 10;
    const resumed = typeof resumeLease === 'number' ? this.leases.get(resumeLease) : undefined;
    const existing = this.nodes.get(node);
    this.revision += 1;
    if (resumed && existing && resumed.node === node && existing.lease === resumeLease) {
      resumed.expiresAt = Date.now() + resumed.ttl * 1000;
      existing.record = record;
      return { lease: resumeLease as number, ttl: resumed.ttl, tenure: existing.tenure, revision: this.revision };
    }
    // A new registration is a new tenure: the previous lease is revoked with its keys.
    if (existing) {
      this.leases.delete(existing.lease);
      this.nodes.delete(node);
      this.revision += 1;
    }
    const lease = this.nextLease++;
    this.leases.set(lease, { node, ttl, expiresAt: Date.now() + ttl * 1000 });
    const tenure = this.revision;
    this.nodes.set(node, { record, tenure, lease });
    return { lease, ttl, tenure, revision: this.revision };
  }

  private async poll(node: string, after: number, waitMs: number): Promise<{ revision: number; changed: boolean; assignments: Assignment[] }> {
    // after=0 answers at once with the full list, as the real server does.
    const changedSince = () => after === 0 || (this.lastChange.get(node) ?? 0) > after;
    if (!changedSince()) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          this.waiters.delete(check);
          resolve();
        };
        const check = () => changedSince() && done();
        const t = setTimeout(done, waitMs);
        this.waiters.add(check);
      });
    }
    return { revision: this.revision, changed: changedSince(), assignments: [...this.mapOf(node).values()] };
  }
}
