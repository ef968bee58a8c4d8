import { CcaError } from '../../core/diagnostics/index.js';
import { membershipCopySchema, type MembershipVersion, type PeerInfo } from '../../core/model/quorum.js';
import type { FenceClock } from '../fence.js';
import type { StateDir } from '../state.js';
import { PeerKeys } from './keys.js';
import { PeerQuorum } from './outage.js';
import { PeerServer } from './server.js';

export interface NodePeerOptions {
  node: string;
  state: StateDir;
  /** host:port to listen on (port 0: any) and the address to publish ('' = the one bound). */
  listen: string;
  advertise: string;
  now: () => number;
  fence: FenceClock;
  keepaliveSettled: () => Promise<unknown> | undefined;
  ttlMs: () => number;
  log: (line: string) => void;
  /** How questions to peers are sent (tests cut a node off with it). */
  fetch?: typeof fetch;
}

/**
 * Everything of the quorum rule a real agent holds (docs/fencing.md): its key pair, its peer
 * endpoint, its membership copy (from the assignments answers), and the polling loop whose
 * confirmations the fence decision consults. While a confirmed outage lasts it moves the
 * supervisors' deadline (`<state>/fence-at`) to the chain's end, so a frozen or killed
 * agent still fences once the confirmations stop; the lease's own fence point is kept apart
 * for a restart (StateDir.leaseFenceAt).
 */
export class NodePeer {
  readonly quorum: PeerQuorum;
  private server: PeerServer | undefined;
  private copy: { copy: MembershipVersion; fetchedAt: number } | undefined;
  private extended = false;

  constructor(private readonly o: NodePeerOptions) {
    const keys = PeerKeys.inDir(o.state.dir);
    this.keys = keys;
    this.quorum = new PeerQuorum({
      self: o.node,
      keys,
      now: o.now,
      fenceAt: () => o.fence.fenceAt(),
      lastOkSentAt: () => {
        const since = o.fence.sinceRenewal(o.now());
        return Number.isFinite(since) ? o.now() - since : undefined;
      },
      keepaliveSettled: o.keepaliveSettled,
      ttlMs: o.ttlMs,
      membership: () => this.copy,
      log: o.log,
      ...(o.fetch ? { fetch: o.fetch } : {}),
    });
  }

  private readonly keys: PeerKeys;

  /**
   * An agent restarted during a confirmed outage: the previous run's chain ran unbroken until
   * the deadline it left in `fence-at` (past the lease's own point only while confirmed), so
   * the chain resumes from there rather than fencing everything at once. Call after the
   * fence clock was restored.
   */
  resume(): void {
    const leaseAt = this.o.fence.fenceAt();
    const until = this.o.state.supervisorDeadline();
    if (leaseAt === undefined || !Number.isFinite(leaseAt) || until === undefined || until <= leaseAt) return;
    this.quorum.latch.confirmed(leaseAt, until);
    this.extended = true;
    this.o.log(`resuming an outage confirmed until ${new Date(until).toISOString()} by the previous run`);
  }

  /** Start the endpoint; what to publish in the node record. */
  async start(): Promise<PeerInfo> {
    this.server = new PeerServer({ node: this.o.node, keys: this.keys, listen: this.o.listen, membership: () => this.copy?.copy, reaches: () => this.quorum.reaches() });
    let bound: string;
    try {
      bound = await this.server.start();
    } catch (e) {
      throw new CcaError('CCA-E0580', { node: this.o.node, address: this.o.listen, reason: e instanceof Error ? e.message : String(e) });
    }
    return { address: this.o.advertise || bound, publicKey: this.keys.publicKey };
  }

  /** The membership that came with an assignments answer, fetched by a request sent at `sentAt`. */
  learned(membership: unknown, sentAt: number): void {
    const m = membershipCopySchema.nullable().optional().safeParse(membership);
    if (!m.success || !m.data) return;
    if (!this.copy || sentAt >= this.copy.fetchedAt) this.copy = { copy: m.data, fetchedAt: sentAt };
  }

  /** Rounds every QUORUM.pollMs; after each, the supervisors' deadline follows the chain. */
  loop(isClosed: () => boolean, sleep: (ms: number) => Promise<void>, changed: () => void): Promise<void> {
    return this.quorum.loop(isClosed, sleep, () => {
      this.syncDeadline();
      changed();
    });
  }

  private syncDeadline(): void {
    const fenceAt = this.o.fence.fenceAt();
    if (fenceAt === undefined || !Number.isFinite(fenceAt)) return;
    const until = this.quorum.latch.runsUntil(this.o.now());
    if (until !== undefined && until > fenceAt) {
      this.o.state.saveRunUntil(until);
      this.extended = true;
    } else if (this.extended) {
      this.o.state.saveRunUntil(fenceAt);
      this.extended = false;
    }
  }

  async close(): Promise<void> {
    await this.server?.close();
  }
}

