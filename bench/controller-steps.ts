/**
 * `npx tsx bench/controller-steps.ts [--replicas 1000] [--nodes R/10]`: what the controllers
 * cost as the cluster grows, measured in CPU time and keys read rather than wall time (which
 * a shared machine distorts). The real controllers run one step at a time on a MemoryStore,
 * as the in-process driver would after each change, for one service of R replicas:
 *   (a) from apply until every replica is placed: rounds of (replica controller, scheduler,
 *       rollout, endpoints, network), each controller's steps, CPU ms and keys read;
 *   (b) every replica reported running, then one converged step of each controller.
 * Super-linear growth shows as (a) rounds growing with R, or (b) a step's CPU growing
 * faster than R. The last line is JSON.
 */
import { loadavg } from 'node:os';
import { buildKey, encodeFact, prefixOf } from '../core/keys.js';
import { serviceSpecSchema } from '../core/model/service.js';
import { MemoryStore } from '../db/memory.js';
import type { RangeRequest, Store } from '../db/store.js';
import type { Controller } from '../jobs/controller.js';
import { controllers } from '../jobs/controllers/index.js';
import { listFacts } from '../jobs/facts.js';
import { Rng } from '../jobs/sim/rng.js';
import { numberArg } from './support/usage.js';

const arg = numberArg;
const R = arg('replicas', 1000);
const N = arg('nodes', Math.max(1, Math.round(R / 10)));
const load = () => loadavg().map((x) => Number(x.toFixed(2)));
const loadAtStart = load();

let t = 1_000;
const store = new MemoryStore({ now: () => t });
const rng = new Rng(7);
const list = controllers({ node: { lostGraceMs: 1_000 }, retention: false });
const by = new Map(list.map((c) => [c.name, c]));
let keysRead = 0;
/** The store as the steps see it: every key a range returns is counted. */
const counted = new Proxy(store, {
  get(target, p) {
    if (p === 'range') return async (r: RangeRequest) => {
      const x = await target.range(r);
      keysRead += x.kvs.length;
      return x;
    };
    const v = (target as unknown as Record<string | symbol, unknown>)[p];
    return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
  },
}) as Store;

async function step(c: Controller, subject?: string): Promise<{ ms: number; keys: number }> {
  const cpu = process.cpuUsage();
  const k0 = keysRead;
  await c.reconcile({ store: counted, now: t, random: () => rng.next(), ...(subject !== undefined ? { subject } : {}) });
  const u = process.cpuUsage(cpu);
  return { ms: (u.user + u.system) / 1000, keys: keysRead - k0 };
}

// The cluster as agents leave it: N nodes registered (room for twice the replicas), marked ready.
for (let i = 0; i < N; i++) {
  const { id } = await store.grantLease(3_600);
  const capacity = { cpuMillis: Math.ceil((2 * R) / N) * 100, memoryBytes: Math.ceil((2 * R) / N) * 32 * 2 ** 20 };
  await store.put(buildKey('node', `n${i}`), encodeFact('node', { name: `n${i}`, zone: 'abcd'[i % 4]!, capacity, images: { 'busybox:1.35': 'sha256:fake' } }), { lease: id });
}
await step(by.get('node')!);
const spec = serviceSpecSchema.parse({ name: 'bench', image: 'busybox:1.35', command: ['sleep', '3600'], replicas: R, resources: { cpuMillis: 100, memoryBytes: 32 * 2 ** 20 } });
await store.put(buildKey('service', 'bench'), encodeFact('service', spec));

// (a) apply → every replica placed.
const placing = new Map<string, { steps: number; ms: number; keys: number }>();
let rounds = 0;
for (; rounds < 10_000; ) {
  rounds++;
  t += 10;
  for (const name of ['replica', 'scheduler', 'rollout', 'endpoints', 'network']) {
    const c = by.get(name)!;
    const s = await step(c, c.subjectOf ? 'bench' : undefined);
    const e = placing.get(name) ?? { steps: 0, ms: 0, keys: 0 };
    placing.set(name, { steps: e.steps + 1, ms: e.ms + s.ms, keys: e.keys + s.keys });
  }
  if ((await store.range({ prefix: prefixOf('assigned'), countOnly: true })).count >= R) break;
}

// (b) every replica reported running; one step of each controller takes it in, the next is converged.
for (const a of await listFacts(store, 'assigned', prefixOf('assigned'))) {
  await store.put(buildKey('observed', a.value.node, a.value.replica), encodeFact('observed', { replica: a.value.replica, service: 'bench', node: a.value.node, tenure: a.value.tenure, state: 'running', at: t }));
}
const converged: Record<string, { firstMs: number; convergedMs: number; keys: number }> = {};
for (const name of ['replica', 'scheduler', 'rollout', 'endpoints', 'network', 'node', 'auditor', 'storage']) {
  const c = by.get(name)!;
  // Taking the change in may take several steps (endpoints publish at most 64 txns a step):
  // steps until one writes nothing, then one more, the converged step.
  let first = { ms: 0, keys: 0 };
  for (let i = 0; i < 50; i++) {
    t += 10;
    const before = await store.revision();
    const s = await step(c, c.subjectOf ? 'bench' : undefined);
    first = { ms: first.ms + s.ms, keys: first.keys + s.keys };
    if ((await store.revision()) === before) break;
  }
  t += 10;
  const again = await step(c, c.subjectOf ? 'bench' : undefined);
  converged[name] = { firstMs: Math.round(first.ms), convergedMs: Math.round(again.ms), keys: again.keys };
}

console.log(`${R} replicas on ${N} nodes (MemoryStore, CPU time of this process)`);
console.log(`(a) apply → all placed in ${rounds} round(s):`);
for (const [name, e] of placing) console.log(`    ${name.padEnd(10)} ${String(e.steps).padStart(4)} steps ${String(Math.round(e.ms)).padStart(7)} ms CPU ${String(e.keys).padStart(9)} keys read`);
console.log('(b) every replica running: taking it in, then one converged step');
for (const [name, e] of Object.entries(converged)) console.log(`    ${name.padEnd(10)} ${String(e.firstMs).padStart(6)} ms, then ${String(e.convergedMs).padStart(5)} ms reading ${e.keys} keys`);
console.log(JSON.stringify({ bench: 'controller-steps', replicas: R, nodes: N, rounds, placing: Object.fromEntries([...placing].map(([k, e]) => [k, { steps: e.steps, cpuMs: Math.round(e.ms), keys: e.keys }])), converged, loadAverage: { atStart: loadAtStart, atEnd: load() } }));
