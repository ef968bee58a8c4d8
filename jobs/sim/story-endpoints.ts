import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import type { Store } from '../../db/store.js';
import { listFacts } from '../facts.js';
import { why, whyText } from '../decisions/why.js';
import { expectThat, result, running, simRandom, web, type ScenarioResult } from './scenarios.js';
import { SimWorld, type SimOptions } from './world.js';

const Gi = 1024 ** 3;

export const ENDPOINT_INVARIANTS = {
  sound: 'endpoints-sound',
  complete: 'endpoints-complete',
} as const;

/**
 * How long (virtual ms, with the store up) a published set may disagree with the replicas
 * before it is a violation. The endpoint step runs at the same instant as the change that
 * wakes it, so the disagreement normally lasts 0 ms; a step whose compare failed retries
 * 100 ms later. A lost node's replicas must be gone within this bound: "within the step".
 */
export const STALE_BOUND_MS = 500;

/**
 * Written independently of the controller (it must be able to catch the controller out):
 * what is wrong with each service's published endpoints right now. `sound`: an endpoint
 * that is not a live replica running and ready (readiness passing when its spec has a
 * check, liveness not failing) on a ready node under the tenure it was placed with.
 * `complete`: a replica that is all of that but not published.
 */
export async function endpointProblems(store: Store): Promise<{ sound: string[]; complete: string[] }> {
  const sound: string[] = [];
  const complete: string[] = [];
  const get = async (key: string) => store.get(key);
  const servesAt = async (replica: string, service: string): Promise<{ node: string } | string> => {
    const rk = await get(buildKey('replica', service, replica));
    if (!rk) return 'has no replica record';
    const rec = decodeFact('replica', rk.key, rk.value);
    if (rec.desired !== 'run' || rec.retired) return `is ${rec.retired ? 'retired' : 'stopping'}`;
    const pk = await get(buildKey('placement', replica));
    if (!pk) return 'is not placed';
    const { node, tenure } = decodeFact('placement', pk.key, pk.value);
    const nk = await get(buildKey('node', node));
    if (!nk || nk.createRevision !== tenure) return `is on ${node}, whose tenure ${tenure} ended`;
    const sk = await get(buildKey('nodeStatus', node));
    const st = sk ? decodeFact('nodeStatus', sk.key, sk.value) : undefined;
    if (!st || st.state !== 'ready' || st.tenure !== tenure) return `is on ${node}, which is ${st ? st.state : 'without status'}`;
    const ak = await get(buildKey('assigned', node, replica));
    const a = ak ? decodeFact('assigned', ak.key, ak.value) : undefined;
    if (!a || a.tenure !== tenure) return `has no assignment on ${node} under tenure ${tenure}`;
    const ok = await get(buildKey('observed', node, replica));
    const o = ok ? decodeFact('observed', ok.key, ok.value) : undefined;
    if (!o || o.tenure !== tenure) return `has no report from ${node} under tenure ${tenure}`;
    if (o.state !== 'running') return `is ${o.state} on ${node}`;
    if (o.health.liveness === 'failing') return `fails liveness on ${node}`;
    if (a.spec.health.readiness && o.health.readiness !== 'passing') return `is not ready on ${node} (readiness ${o.health.readiness})`;
    return { node };
  };
  const published = new Map<string, Set<string>>();
  for (const e of await listFacts(store, 'endpoints', prefixOf('endpoints'))) {
    const svc = e.value.service;
    published.set(svc, new Set(e.value.endpoints.map((x) => x.replica)));
    if (!(await get(buildKey('service', svc)))) sound.push(`${svc}: endpoints published for a deleted service`);
    for (const x of e.value.endpoints) {
      const s = await servesAt(x.replica, svc);
      if (typeof s === 'string') sound.push(`${svc}: endpoint ${x.replica} ${s}`);
      else if (s.node !== x.node) sound.push(`${svc}: endpoint ${x.replica} is published on ${x.node} but runs on ${s.node}`);
    }
  }
  for (const r of await listFacts(store, 'replica', prefixOf('replica'))) {
    if (r.value.desired !== 'run' || r.value.retired || published.get(r.value.service)?.has(r.value.id)) continue;
    if (typeof (await servesAt(r.value.id, r.value.service)) !== 'string') complete.push(`${r.value.service}: ${r.value.id} is running and ready but not published`);
  }
  return { sound, complete };
}

/**
 * Run the endpoint invariants after every step and agent tick: a problem may last at most
 * STALE_BOUND_MS of store-up time. Returns the longest disagreement seen, for the report.
 */
export function watchEndpoints(w: SimWorld): { maxStaleMs: number } {
  const seen = new Map<string, { since: number; outages: number }>();
  const stats = { maxStaleMs: 0 };
  w.addChecker(async (world) => {
    const { sound, complete } = await endpointProblems(world.store);
    const now = new Set<string>();
    for (const [name, list] of [[ENDPOINT_INVARIANTS.sound, sound], [ENDPOINT_INVARIANTS.complete, complete]] as const) {
      for (const p of list) {
        const key = `${name}\0${p}`;
        now.add(key);
        const s = seen.get(key);
        // An outage stops every step; the bound counts time with the store up.
        if (!s || s.outages !== world.stats.outages) {
          seen.set(key, { since: world.t, outages: world.stats.outages });
          continue;
        }
        const stale = world.t - s.since;
        stats.maxStaleMs = Math.max(stats.maxStaleMs, stale);
        if (stale > STALE_BOUND_MS) world.violate(name, `${p} for ${stale} ms`);
      }
    }
    for (const k of [...seen.keys()]) if (!now.has(k)) seen.delete(k);
  });
  return stats;
}

const endpointsOf = async (w: SimWorld, service = 'web') => {
  const kv = await w.store.get(buildKey('endpoints', service));
  return kv ? decodeFact('endpoints', kv.key, kv.value).endpoints : [];
};

/**
 * sim-endpoints: three nodes with declared addresses, six web replicas with a readiness
 * and a liveness check. Readiness flaps (out once the check fails, back in after), a liveness failure (replaced
 * per the restart policy, the decision quoting the reason), a machine powered off (its
 * endpoints gone at the lease expiry, before any replacement), a partition and a store
 * outage at seeded times — the endpoint invariants checked after every step throughout.
 */
export async function simEndpoints(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const notes: string[] = [];
  const stale = watchEndpoints(w);
  for (const [i, zone] of ['a', 'b', 'c'].entries()) w.addNode({ name: `node${i + 1}`, address: `127.0.1.${i + 1}`, zone, cpuMillis: 2_000, memoryBytes: 4 * Gi });
  await w.runFor(3_000);
  const readiness = { probe: { type: 'http' as const, path: '/ready', port: 'http' }, intervalMs: 1_000, timeoutMs: 500 };
  const liveness = { probe: { type: 'tcp' as const, port: 'http' }, intervalMs: 1_000, timeoutMs: 500 };
  await w.apply(web(6, { ports: [{ name: 'http', container: 8080 }], health: { readiness, liveness } }));
  // The agent calls a check failing after failureThreshold (3, the default) failed probes in a
  // row; it probes on its passes (a simulated agent's come a tick apart, so a probe may wait
  // one more tick), and the report follows on the next pass.
  const probeEvery = readiness.intervalMs + w.timing.tickMs;
  const failsWithin = 3 * probeEvery + 2 * w.timing.tickMs;
  await w.runFor(20_000);
  let eps = await endpointsOf(w);
  expectThat(w, eps.length === 6, 'six ready replicas published');
  expectThat(w, eps.every((e) => e.address === `127.0.1.${e.node.slice(4)}` && e.ports.http === 8080), "each endpoint carries its node's address and the http port");

  // Readiness flaps on a seeded replica: out once its check fails, back after, never restarted.
  const flapped = w.rng.pick(eps).replica;
  w.setReadiness(flapped, true);
  await w.runFor(failsWithin);
  eps = await endpointsOf(w);
  expectThat(w, !eps.some((e) => e.replica === flapped) && eps.length === 5, `${flapped} left the endpoints within its failure threshold of failing probes and a tick`);
  const ans = await why(w.store, 'service', 'web');
  notes.push(whyText(ans));
  expectThat(w, ans.complete && ans.chain[0]!.decision.reasons.some((r) => r.startsWith(`${flapped} is out: readiness failing`)), 'why service web names the readiness failure');
  w.setReadiness(flapped, false);
  await w.runFor(probeEvery + 2 * w.timing.tickMs);
  expectThat(w, (await endpointsOf(w)).some((e) => e.replica === flapped), `${flapped} joined again once ready`);
  expectThat(w, (await running(w, 'web')).includes(flapped), 'failing readiness restarts nothing');

  // Liveness fails: the agent stops it, the replica controller replaces it per policy.
  const victim = w.rng.pick((await endpointsOf(w)).filter((e) => e.replica !== flapped)).replica;
  w.failLiveness(victim);
  await w.runFor(10_000);
  const rec = (await listFacts(w.store, 'replica', prefixOf('replica', 'web'))).find((r) => r.value.id === victim)?.value;
  expectThat(w, (await endpointsOf(w)).length === 6 && !(await endpointsOf(w)).some((e) => e.replica === victim), 'a liveness failure is replaced and the replacement is published');
  const vw = await why(w.store, 'replica', victim);
  notes.push(whyText(vw));
  expectThat(w, (rec?.reason ?? '').includes('liveness failed') || vw.history.some((l) => l.decision.reasons.some((r) => r.includes('liveness failed'))), `why replica ${victim} says liveness failed`);

  // Seeded faults: a machine powered off, a partition, a store outage, more readiness flaps.
  const nodes = ['node1', 'node2', 'node3'];
  const dark = w.rng.pick(nodes);
  const cut = w.rng.pick(nodes.filter((n) => n !== dark));
  const t0 = w.t;
  w.at(t0 + w.rng.int(0, 3) * 1_000, 'fault', () => w.powerOff(dark));
  w.at(t0 + w.rng.int(15, 20) * 1_000, 'heal', () => w.powerOn(dark));
  w.at(t0 + w.rng.int(25, 30) * 1_000, 'fault', () => w.partition(cut, true));
  w.at(t0 + w.rng.int(45, 50) * 1_000, 'heal', () => w.partition(cut, false));
  w.at(t0 + w.rng.int(55, 60) * 1_000, 'fault', () => w.setStoreDown(true));
  w.at(t0 + w.rng.int(63, 68) * 1_000, 'heal', () => w.setStoreDown(false));
  for (let i = 0; i < 4; i++) {
    w.at(t0 + w.rng.int(5, 70) * 1_000, 'fault', async () => {
      const ids = await running(w, 'web');
      if (ids.length > 0) w.setReadiness(w.rng.pick(ids), w.rng.chance(0.7));
    });
  }
  w.at(t0 + 75_000, 'heal', async () => {
    for (const id of await running(w, 'web')) w.setReadiness(id, false);
  });
  // Just after the powered-off machine's lease must have expired: nothing of it is published.
  w.at(t0 + 3_000 + w.timing.ttlSeconds * 1_000 + 1_000, 'check', async () => {
    const left = (await endpointsOf(w)).filter((e) => e.node === dark);
    expectThat(w, left.length === 0, `no endpoint on ${dark} once its lease expired`);
  });
  await w.runFor(110_000);
  eps = await endpointsOf(w);
  expectThat(w, eps.length === 6, `six endpoints again after the faults (has ${eps.length})`);
  await w.checkQuiescent();
  notes.push(`longest disagreement between the published set and the replicas: ${stale.maxStaleMs} ms (bound ${STALE_BOUND_MS} ms)`);
  return result('sim-endpoints', w, notes);
}

/**
 * sim-endpoints-random: the randomized cluster and fault schedule of `random` (crashes,
 * agent restarts, power cycles, partitions, store outages, clock skew, failing kills,
 * scaling, a corrupted allocation) with the endpoint invariants checked after every step.
 */
export async function simEndpointsRandom(opts: SimOptions): Promise<ScenarioResult> {
  let stale = { maxStaleMs: 0 };
  const r = await simRandom(opts, undefined, (w) => {
    stale = watchEndpoints(w);
  });
  r.scenario = 'sim-endpoints-random';
  r.notes.push(`longest disagreement between the published set and the replicas: ${stale.maxStaleMs} ms (bound ${STALE_BOUND_MS} ms)`);
  return r;
}
