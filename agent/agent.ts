import { AgentClient } from './client.js';
import { checkAssignment } from './confine.js';
import { HttpControlPlane } from './control-plane.js';
import { AgentCore, FENCE, type AgentClock, type OutageOracle, type Prober, type Workspace } from './core/index.js';
import { probeFor } from './health.js';
import { DEFAULT_LOG_MAX_TOTAL, enforceLogBudget, LOG_BUDGET_CHECK_MS } from './log-budget.js';
import { LogServer, type LogServerOptions } from './log-server.js';
import { materialize } from './materialize.js';
import type { NetnsManager } from './netns.js';
import { PolicyFollower } from './network-policy.js';
import { VolumeFeed } from './volume-feed.js';
import type { Runtime } from './runtime.js';
import type { StateDir } from './state.js';
import { VolumeDir } from './volumes.js';
import { NodePeer } from './peer/node-peer.js';
import type { Cidr } from '../core/model/peer-address.js';
import type { NodeRecordInput } from '../core/model/index.js';
import { QUORUM } from '../core/model/quorum.js';

export { AGENT_VERSION, FENCE } from './core/index.js';

export interface AgentOptions {
  server: string;
  node: string;
  /** Join token, used to enroll when the state directory holds no credential (or it is refused). */
  token: string;
  state: StateDir;
  runtime: Runtime;
  record: Omit<NodeRecordInput, 'name' | 'images' | 'runtime' | 'agentVersion'>;
  leaseTtlSeconds?: number;
  /** Long-poll wait per request. */
  pollWaitMs?: number;
  /** Observations of autoscaled replicas are re-sent (with fresh usage) at least this often. */
  reportEveryMs?: number;
  /** Other replicas' usage is refreshed this often (default 30 s; agent/core/agent-core.ts says why). */
  usageEveryMs?: number;
  now?: () => number;
  log?: (line: string) => void;
  /** Network isolation (the runtime puts replicas in these namespaces): follow and enforce `/network/<node>`. */
  network?: NetnsManager;
  /** How requests to the server are made: the global fetch, or one trusting --ca (agent/https.ts). */
  fetch?: typeof fetch;
  /** Tighter bounds on one log request (tests); LOG_LIMITS otherwise. */
  logLimits?: LogServerOptions['limits'];
  /** The peer endpoint (docs/fencing.md): listen (default 127.0.0.1:0), advertise, and how questions are sent. */
  peer?: { listen?: string; advertise?: string; networks?: readonly Cidr[]; fetch?: typeof fetch };
  /** Replaces the peers as the judge of an outage (tests); by default the peers' quorum (agent/peer/). */
  outage?: OutageOracle;
  /** `--disk-min-free`: below this the node reports disk full (CCA-E0570); 0: only failed writes count. */
  diskMinFreeBytes?: number;
  /** `--log-max-total`: all workload output on the node; the oldest rotated files go first (agent/log-budget.ts). */
  logMaxTotalBytes?: number;
}

/** What the agent reports of itself (its metrics, the benches' load processes): the core's vitals and the peer questions it sent. */
export type AgentVitals = ReturnType<AgentCore['vitals']> & { peerQuestions: number };

/**
 * The node agent's shell around its core (agent/core/): the timers and loops that drive it,
 * the HTTP client it reports through, the state directory, the real runtime, files and
 * volumes on the host, the probes' sockets, the log relay and the network policy follower.
 * Every decision — what runs, when to fence, what to report — is the core's.
 */
export class Agent {
  private readonly client: AgentClient;
  private readonly core: AgentCore;
  private closed = false;
  private timer: ReturnType<typeof setInterval> | undefined;
  private budgetTimer: ReturnType<typeof setInterval> | undefined;
  private readonly loops: Promise<void>[] = [];
  private readonly sleepers = new Set<() => void>();
  private readonly control: HttpControlPlane;
  private readonly volumeFeed: VolumeFeed;
  private readonly policy: PolicyFollower | undefined;
  private readonly logServer: LogServer;
  /** The quorum rule's shell half: peer endpoint, membership copy, peer rounds; the core's outage oracle. */
  private readonly peer: NodePeer;
  /** The node record, published with the peer endpoint's address and key once it listens. */
  private readonly record: AgentOptions['record'];

  constructor(private readonly opts: AgentOptions) {
    const now = opts.now ?? Date.now;
    const clock: AgentClock = { mono: now, wall: now };
    const volumes = new VolumeDir(opts.state.dir);
    this.client = new AgentClient(opts.server, opts.node, undefined, opts.fetch);
    this.volumeFeed = new VolumeFeed({
      client: this.client,
      pollWaitMs: opts.pollWaitMs ?? 30_000,
      isClosed: () => this.closed,
      sleep: (ms) => this.sleep(ms),
    });
    this.control = new HttpControlPlane(this.client, opts.state, opts.token, this.volumeFeed);
    const workspace: Workspace = {
      prepare: (a) => {
        checkAssignment(a);
        const dir = opts.state.replicaDir(a.replica);
        const { files, env } = materialize(dir, a.spec);
        return { dir, files, env, volumes: volumes.mountsFor(a.spec) };
      },
    };
    const prober: Prober = { probe: (check, spec, handle, address) => probeFor(check, spec, opts.runtime, handle, address)() };
    this.record = { ...opts.record };
    const ttlSeconds = Math.max(FENCE.minTtlSeconds, opts.leaseTtlSeconds ?? QUORUM.defaultTtlSeconds);
    this.peer = new NodePeer({
      node: opts.node,
      state: opts.state,
      listen: opts.peer?.listen ?? '127.0.0.1:0',
      advertise: opts.peer?.advertise ?? '',
      now,
      fence: () => this.core.leases.fence,
      keepaliveSettled: () => this.core.leases.keepaliveInFlight,
      ttlMs: () => (this.core.leases.lease?.ttl ?? ttlSeconds) * 1000,
      log: (l) => this.log(l),
      ...(opts.peer?.fetch ? { fetch: opts.peer.fetch } : {}),
      ...(opts.peer?.networks ? { networks: opts.peer.networks } : {}),
    });
    this.core = new AgentCore({
      node: opts.node,
      record: this.record,
      leaseTtlSeconds: ttlSeconds,
      ...(opts.reportEveryMs === undefined ? {} : { reportEveryMs: opts.reportEveryMs }),
      ...(opts.usageEveryMs === undefined ? {} : { usageEveryMs: opts.usageEveryMs }),
      outage: opts.outage ?? this.peer,
      ...(opts.diskMinFreeBytes === undefined ? {} : { diskMinFreeBytes: opts.diskMinFreeBytes }),
      clock,
      random: Math.random,
      control: this.control,
      runtime: opts.runtime,
      disk: opts.state,
      workspace,
      volumes,
      prober,
      log: (l) => this.log(l),
      enforcesPolicy: opts.network !== undefined,
      onStarting: (replica) => this.policy?.forget(replica),
      // New namespaces start with the fallback policy; put the node's rules in place now.
      onStarted: () => void this.policy?.sync(),
    });
    if (opts.network) {
      this.policy = new PolicyFollower({
        client: this.client,
        netns: opts.network,
        replicas: () => this.core.placed(),
        pollWaitMs: opts.pollWaitMs ?? 30_000,
        isClosed: () => this.closed,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        log: (l) => this.log(l),
        event: (kind, message, replica) => this.core.event(kind, message, replica),
      });
    }
    this.logServer = new LogServer({
      node: opts.node,
      client: this.client,
      runtime: opts.runtime,
      holds: (replica) => this.core.holds(replica),
      pollWaitMs: opts.pollWaitMs ?? 30_000,
      isClosed: () => this.closed,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      log: (l) => this.log(l),
      ...(opts.logLimits ? { limits: opts.logLimits } : {}),
    });
  }

  /** Adopt what the runtime holds, restore the cached desired state, and start the loops. */
  async start(): Promise<void> {
    // Published with the registration: where peers ask, and the key the answers are signed with.
    this.record.peer = await this.peer.start();
    await this.core.start();
    this.timer = setInterval(() => void this.core.tick(), FENCE.checkMs);
    this.budgetTimer = setInterval(() => this.trimLogs(), LOG_BUDGET_CHECK_MS);
    this.loops.push(this.leaseLoop(), this.pollLoop(), this.logLoop(), this.volumeFeed.loop(), this.peer.loop(() => this.closed, (ms) => this.sleep(ms), () => this.core.outageChanged()));
    if (this.policy) this.loops.push(this.policy.loop());
  }

  /** Stop the agent's loops. Workloads keep running: an agent shutdown is not a node drain. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.budgetTimer) clearInterval(this.budgetTimer);
    this.logServer.close();
    await this.peer.close();
    this.client.abort();
    for (const wake of [...this.sleepers]) wake();
    await Promise.allSettled(this.loops);
    await this.core.close();
  }

  /** For tests and the CLI status line. */
  status(): ReturnType<AgentCore['status']> {
    return this.core.status();
  }

  /** The node's total cap on workload output: the oldest rotated files go first. */
  private trimLogs(): void {
    const gone = enforceLogBudget(this.opts.state.replicas, this.opts.logMaxTotalBytes ?? DEFAULT_LOG_MAX_TOTAL);
    if (gone.length > 0) this.log(`workload output over the node's cap (--log-max-total): deleted ${gone.length} rotated file${gone.length === 1 ? '' : 's'}, the oldest`);
  }

  /** For the metrics endpoint (agent/metrics.ts). */
  vitals(): AgentVitals {
    return { ...this.core.vitals(), peerQuestions: this.peer.quorum.questions };
  }

  private log(line: string): void {
    (this.opts.log ?? ((l: string) => process.stderr.write(`${new Date().toISOString()} agent ${this.opts.node}: ${l}\n`)))(line);
  }

  /** A pause that close() cuts short. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      const done = () => {
        clearTimeout(t);
        this.sleepers.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  private async leaseLoop(): Promise<void> {
    while (!this.closed) await this.sleep(await this.core.leaseStep());
  }

  /** Log requests once enrolled (agent/log-server.ts). */
  private async logLoop(): Promise<void> {
    while (!this.closed && !this.control.enrolled) await this.sleep(100);
    if (!this.closed) await this.logServer.loop();
  }

  private async pollLoop(): Promise<void> {
    let after = 0;
    let failures = 0;
    while (!this.closed) {
      if (!this.control.enrolled) {
        await this.sleep(100);
        continue;
      }
      const next = await this.core.poll(after, this.opts.pollWaitMs ?? 30_000);
      if (next !== undefined) {
        after = next;
        failures = 0;
      } else if (!this.closed) {
        await this.sleep(this.core.pollBackoff(++failures));
      }
    }
  }
}
