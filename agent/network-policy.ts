import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { enforcedFor, networkBundleSchema, networkRuleSchema, type Enforced, type NetworkBundle, type ServiceSpec } from '../core/model/index.js';
import type { AgentClient } from './client.js';
import type { NetnsManager } from './netns.js';
import { renderPolicy } from './nft.js';
import { messageOf } from '../core/diagnostics/index.js';

export interface PolicyFollowerOptions {
  client: AgentClient;
  netns: NetnsManager;
  /** The replicas the agent holds now, with the spec each was assigned with. */
  replicas: () => { replica: string; spec: Pick<ServiceSpec, 'network' | 'ports'> }[];
  pollWaitMs: number;
  isClosed: () => boolean;
  sleep: (ms: number) => Promise<void>;
  log: (line: string) => void;
  event: (kind: string, message: string, replica?: string) => void;
}

export { enforcedFor };

/** What agents before the bundle saved: the node's rule set with each replica's allowances and their addresses. */
const legacyRulesSchema = z.object({
  node: z.string(),
  replicas: z.array(z.object({ replica: z.string(), policy: z.enum(['open', 'allow']), rules: z.array(networkRuleSchema) })),
});

/**
 * Follows the node's network bundle (its rule set, its policed services' policies and the
 * address sets they name; long poll through the agent API) and applies it to each local
 * replica's namespace with nft, only where the script changed, without touching the
 * workloads. The last bundle is kept in the state directory: an agent restarted while the
 * server is away re-applies what it last knew, never the deny-all fallback (rule 8).
 */
export class PolicyFollower {
  private bundle: NetworkBundle | undefined;
  private legacy: Map<string, Enforced> | undefined;
  /** The server's last bundle as received (JSON), to tell a new one from the same one again. */
  private lastAnswer: string | undefined;
  private readonly applied = new Map<string, string>();
  private syncing: Promise<void> = Promise.resolve();
  private readonly file: string;

  constructor(private readonly opts: PolicyFollowerOptions) {
    this.file = join(opts.netns.opts.dir, '.rules.json');
    try {
      const saved: unknown = JSON.parse(readFileSync(this.file, 'utf8'));
      const bundle = networkBundleSchema.safeParse(saved);
      const legacy = legacyRulesSchema.safeParse(saved);
      this.bundle = bundle.success ? bundle.data : undefined;
      // An older agent's file (rules with their addresses copied in): enforced as it was until the first bundle arrives.
      if (!bundle.success && legacy.success) this.legacy = new Map(legacy.data.replicas.map((r) => [r.replica, { policy: r.policy, rules: r.rules }]));
    } catch {
      this.bundle = undefined; // never received one
    }
  }

  /** A replica about to (re)start gets its namespace's fallback from the runtime: forget what we applied. */
  forget(replica: string): void {
    this.applied.delete(replica);
  }

  async loop(): Promise<void> {
    let after = 0;
    let backoff = 200;
    while (!this.opts.isClosed()) {
      if (this.opts.client.credential === '') {
        await this.opts.sleep(100);
        continue;
      }
      try {
        const r = await this.opts.client.network(after, this.opts.pollWaitMs);
        // The whole bundle at `revision` whatever `changed` says (a change committed as the
        // long poll ended is in the bundle, not in the flag): the bundle decides.
        const answer = JSON.stringify(r.bundle);
        if (r.changed || after === 0 || answer !== this.lastAnswer) {
          this.lastAnswer = answer;
          this.bundle = r.bundle;
          this.legacy = undefined;
          this.save();
          await this.sync();
        }
        after = r.revision;
        backoff = 200;
      } catch {
        // The agent's other loops report an unreachable server; keep enforcing what we know.
        await this.opts.sleep(backoff);
        backoff = Math.min(backoff * 2, 5_000);
      }
    }
  }

  private save(): void {
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.bundle ?? null));
    renameSync(tmp, this.file);
  }

  /** Apply what changed; serialised, so the newest rule set is always applied last. */
  sync(): Promise<void> {
    this.syncing = this.syncing.then(() => this.syncNow());
    return this.syncing;
  }

  private async syncNow(): Promise<void> {
    const live = new Set<string>();
    for (const { replica, spec } of this.opts.replicas()) {
      live.add(replica);
      if (!this.opts.netns.info(replica)) continue; // not set up yet: the runtime applies the fallback first
      const script = renderPolicy((this.bundle ? undefined : this.legacy?.get(replica)) ?? enforcedFor(this.bundle, replica, spec), this.opts.netns.gateway);
      if (this.applied.get(replica) === script) continue;
      try {
        await this.opts.netns.apply(replica, script);
        this.applied.set(replica, script);
        this.opts.event('network-policy', 'network policy applied', replica);
      } catch (e) {
        // A CcaError's message carries its code (CCA-E0527); the previous rules stay in force.
        const message = messageOf(e);
        this.opts.log(message);
        this.opts.event('network-policy-failed', message, replica);
      }
    }
    for (const r of this.applied.keys()) if (!live.has(r)) this.applied.delete(r);
  }
}
