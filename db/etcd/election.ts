import { hostname } from 'node:os';
import { Etcd3, type Campaign } from 'etcd3';
import { etcdConnection, parseEtcdUrl } from './store.js';

/** The election's etcd namespace: beside the store's prefix, never inside it (so no Store read sees it). */
export function electionNamespace(prefix: string): string {
  return prefix === '' ? 'ccattler.election/' : `${prefix.replace(/\/$/, '')}.election/`;
}

export interface LeaderOptions {
  /** The election's name inside the namespace. */
  name?: string;
  /** This candidate's value, as the others see it. Default host/pid. */
  value?: string;
  /** The campaign lease's TTL: a killed leader is replaced within about this long. */
  ttlSeconds: number;
  onElected(): void;
  /** Leadership lost (lease error) or given up: stop the work now. */
  onDeposed(): Promise<void>;
  onError?(e: Error): void;
}

export interface Leadership {
  isLeader(): boolean;
  /** Resign (a successor is elected at once) and close. */
  stop(): Promise<void>;
}

/**
 * Run for leader among the pods on one etcd (etcd3's Election: a key on a lease per
 * candidate, the oldest one leads). When the campaign fails (the lease could not be kept
 * alive), the work stops and a new campaign starts a second later.
 */
export async function runForLeader(url: string, opts: LeaderOptions): Promise<Leadership> {
  const t = parseEtcdUrl(url);
  const client = new Etcd3({ ...etcdConnection(t), dialTimeout: 5_000 });
  const election = client.namespace(electionNamespace(t.prefix)).election(opts.name ?? 'driver', opts.ttlSeconds);
  const value = opts.value ?? `${hostname()}/${process.pid}`;
  let campaign: Campaign | undefined;
  let leader = false;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const start = () => {
    if (stopped) return;
    const c = election.campaign(value);
    campaign = c;
    c.on('elected', () => {
      if (stopped || campaign !== c) return;
      leader = true;
      opts.onElected();
    });
    c.on('error', (e: Error) => {
      if (campaign !== c) return;
      campaign = undefined;
      opts.onError?.(e);
      const was = leader;
      leader = false;
      void (was ? opts.onDeposed() : Promise.resolve()).catch(() => undefined).then(() => {
        if (!stopped) retry = setTimeout(start, 1_000);
      });
    });
  };
  start();

  return {
    isLeader: () => leader,
    stop: async () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      const c = campaign;
      campaign = undefined;
      if (leader) {
        leader = false;
        await opts.onDeposed().catch(() => undefined);
      }
      await c?.resign().catch(() => undefined);
      client.close();
    },
  };
}
