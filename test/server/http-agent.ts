import type { Assignment } from '../../core/model/index.js';

/**
 * A minimal agent over the HTTP API for server tests: it registers, follows its
 * assignments with the long poll, and reports each as running (or exited once told to
 * stop). The real agent (agent/) does far more; this proves the server's side.
 */
export class HttpTestAgent {
  private stopped = false;
  private loop: Promise<void> | undefined;
  tenure = 0;
  lease = 0;
  /** Replicas this agent pretends have crashed. */
  readonly crashed = new Set<string>();

  constructor(
    private readonly url: string,
    private readonly join: string,
    readonly node: string,
    private readonly zone = 'a',
    /** Its image catalogue: none keeps it a bystander (a peer that only renews its lease). */
    private readonly images: Record<string, string> = { 'busybox:1.35': 'sha256:test' },
  ) {}

  private credential = '';

  private async call(method: string, path: string, body?: unknown, token = this.credential): Promise<Record<string, unknown>> {
    const r = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  }

  async start(): Promise<void> {
    this.credential = (await this.call('POST', '/v1/agent/enroll', { node: this.node }, this.join)).credential as string;
    const reg = await this.call('POST', `/v1/agent/nodes/${this.node}/register`, {
      name: this.node,
      zone: this.zone,
      capacity: { cpuMillis: 4000, memoryBytes: 8 * 2 ** 30 },
      images: this.images,
      leaseTtlSeconds: 10,
    });
    this.tenure = reg.tenure as number;
    this.lease = reg.lease as number;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let after = 0;
    let lastKeepalive = Date.now();
    while (!this.stopped) {
      try {
        if (Date.now() - lastKeepalive > 2_000) {
          await this.call('POST', `/v1/agent/nodes/${this.node}/keepalive`, { lease: this.lease });
          lastKeepalive = Date.now();
        }
        const r = await this.call('GET', `/v1/agent/nodes/${this.node}/assignments?after=${after}&waitMs=300`);
        after = r.revision as number;
        const assignments = r.assignments as Assignment[];
        if (assignments.length === 0) continue;
        const observations = assignments.map((a) => ({
          replica: a.replica,
          service: a.service,
          node: this.node,
          tenure: this.tenure,
          state: a.desired === 'stop' || this.crashed.has(a.replica) ? 'exited' : 'running',
          ...(this.crashed.has(a.replica) ? { exitCode: 137 } : a.desired === 'stop' ? { exitCode: 0 } : {}),
          health: { liveness: 'passing', readiness: 'passing' },
          at: Date.now(),
        }));
        await this.call('POST', `/v1/agent/nodes/${this.node}/observations`, { tenure: this.tenure, observations });
      } catch (e) {
        if (!this.stopped) await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
