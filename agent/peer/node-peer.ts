import { CcaError } from '../../core/diagnostics/index.js';
import { loopbackNetworks, type Cidr } from '../../core/model/peer-address.js';
import { membershipCopySchema, type MembershipVersion, type PeerInfo } from '../../core/model/quorum.js';
import type { FenceClock, MembershipCopyView, OutageOracle } from '../core/index.js';
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
  /** The core's fence clock (its lease keeper's): the fence point, and when the last keepalive that succeeded was sent. */
  fence: () => FenceClock;
  keepaliveSettled: () => Promise<unknown> | undefined;
  ttlMs: () => number;
  log: (line: string) => void;
  /** How questions to peers are sent (tests cut a node off with it). */
  fetch?: typeof fetch;
  /** Peer networks (--peer-networks, default loopback): members' addresses outside them (and not their registration source) are never dialled. */
  networks?: readonly Cidr[];
}

/**
 * Everything of the quorum rule a real agent's shell holds (docs/fencing.md): its key pair,
 * its peer endpoint, its membership copy (from the assignments answers, handed over by the
 * core), and the polling loop whose confirmations feed the latch (agent/core/quorum.ts). It
 * is the core's OutageOracle: the core fences at `due && !confirmsOutage`, and moves the
 * supervisors' deadline (`<state>/fence-at`) to the chain's end while an outage is
 * confirmed (LeaseKeeper.followOutage), so a frozen or killed agent still fences once the
 * confirmations stop; the lease's own fence point is kept apart for a restart.
 */
export class NodePeer implements OutageOracle {
  readonly quorum: PeerQuorum;
  private server: PeerServer | undefined;
  private current: { copy: MembershipVersion; fetchedAt: number } | undefined;

  constructor(private readonly o: NodePeerOptions) {
    const keys = PeerKeys.inDir(o.state.dir);
    this.keys = keys;
    this.quorum = new PeerQuorum({
      self: o.node,
      keys,
      now: o.now,
      fenceAt: () => o.fence().fenceAt(),
      lastOkSentAt: () => {
        const since = o.fence().sinceRenewal(o.now());
        return Number.isFinite(since) ? o.now() - since : undefined;
      },
      keepaliveSettled: o.keepaliveSettled,
      ttlMs: o.ttlMs,
      membership: () => this.current,
      log: o.log,
      networks: o.networks ?? loopbackNetworks(),
      ...(o.fetch ? { fetch: o.fetch } : {}),
    });
  }

  private readonly keys: PeerKeys;

  confirmsOutage(now: number): boolean {
    return this.quorum.latch.confirmsOutage(now);
  }

  runsUntil(now: number): number | undefined {
    return this.quorum.latch.runsUntil(now);
  }

  /** An agent restarted during a confirmed outage: the chain resumes from the deadline the previous run left (the core reads it). */
  resume(from: number, until: number): void {
    this.quorum.latch.resume(from, until);
  }

  /** The copy the rounds count against, in brief (AgentCore.status). */
  copy(): MembershipCopyView | undefined {
    const c = this.current?.copy;
    return c ? { version: c.version, members: c.members.length, withPeers: c.members.filter((m) => m.peer).length } : undefined;
  }

  /** Start the endpoint; what to publish in the node record. */
  async start(): Promise<PeerInfo> {
    this.server = new PeerServer({ node: this.o.node, keys: this.keys, listen: this.o.listen, membership: () => this.current?.copy, reaches: () => this.quorum.reaches() });
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
    if (!this.current || sentAt >= this.current.fetchedAt) this.current = { copy: m.data, fetchedAt: sentAt };
  }

  /** Rounds every QUORUM.pollMs; after each, `changed` (the core moves the supervisors' deadline and reconciles). */
  loop(isClosed: () => boolean, sleep: (ms: number) => Promise<void>, changed: () => void): Promise<void> {
    return this.quorum.loop(isClosed, sleep, changed);
  }

  async close(): Promise<void> {
    await this.server?.close();
  }
}

