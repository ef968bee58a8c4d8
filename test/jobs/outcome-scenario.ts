import { buildKey, decodeFact } from '../../core/keys.js';
import { auditor, nodeController, replicaController, rolloutController, scheduler } from '../../jobs/controllers/index.js';
import { Bench } from './harness.js';
import { advance, converger, readyUnlessBad, webSpec as web } from './play.js';

const all = [replicaController, scheduler, nodeController({ lostGraceMs: 1_000 }), auditor, rolloutController];
const converge = converger(all);

/** What the controllers decided, without a word of prose: the digest both wording tests compare. */
export interface OutcomeDigest {
  job: { live: number; ended: string[] };
  web: { live: number; ended: string[] };
  rollout: { state: string; desired: number; newLive: number; newReady: number; oldLive: number };
  /** No record the controllers wrote carries a stored sentence. */
  storedReasons: string[];
}

/** The same digest with and without the rendered wording changed. */
export const EXPECTED: OutcomeDigest = {
  job: { live: 1, ended: ['completed'] },
  web: { live: 3, ended: ['restarted'] },
  rollout: { state: 'stuck', desired: 3, newLive: 0, newReady: 0, oldLive: 3 },
  storedReasons: [],
};

/**
 * A job (restart on-failure) whose one replica completes and the other fails; then a web
 * service rolled from v1 to v2 (complete) and to a version whose replicas never get ready
 * and one of which then crashes: the roll stays stuck, with the crash in its reason.
 */
export async function outcomeStory(): Promise<{ digest: OutcomeDigest; stuckReason: string }> {
  const b = new Bench();
  for (const [n, z] of [['n1', 'a'], ['n2', 'b']] as const) await b.register(n, z);
  await b.settle(all);

  await b.apply({ name: 'job', image: 'web:1', replicas: 2, restart: 'on-failure' });
  await b.settle(all);
  const [done, crashed] = await b.live('job');
  const at = async (id: string) => (await b.assignments()).find((a) => a.replica === id)!.node;
  await b.observe(await at(done!.id), done!.id, 'exited', 0);
  await b.observe(await at(crashed!.id), crashed!.id, 'exited', 1);
  await b.settle(all);

  await b.apply(web('1'));
  await converge(b, readyUnlessBad);
  await advance(b, 1_000);
  await b.apply(web('2'));
  await converge(b, readyUnlessBad);
  await advance(b, 1_000);
  const badFrom = b.t;
  await b.apply(web('bad'));
  await converge(b, readyUnlessBad);
  await advance(b, 61_000);
  await converge(b, readyUnlessBad);
  // Stuck: then the new (bad) replica crashes. The rollout reads it retired before the
  // scheduler releases it (after which its record goes).
  const bad = (await b.live('web')).find((r) => r.createdAt >= badFrom)!;
  await b.observe(await at(bad.id), bad.id, 'exited', 2);
  await b.step(replicaController, 'web');
  await b.step(rolloutController, 'web');

  const kv = (await b.store.get(buildKey('rollout', 'web')))!;
  const ro = decodeFact('rollout', kv.key, kv.value);
  const endings = async (service: string) => (await b.replicas(service)).flatMap((r) => (r.retired && r.ended ? [r.ended.outcome] : [])).sort();
  const stored = [...(await b.replicas('job')), ...(await b.replicas('web'))].flatMap((r) => (r.reason ? [r.reason] : []));
  return {
    digest: {
      job: { live: (await b.live('job')).length, ended: [...new Set(await endings('job'))] },
      web: { live: (await b.live('web')).length, ended: [...new Set(await endings('web'))] },
      rollout: { state: ro.state, desired: ro.desired, newLive: ro.newLive, newReady: ro.newReady, oldLive: ro.oldLive },
      storedReasons: stored,
    },
    stuckReason: ro.reason,
  };
}
