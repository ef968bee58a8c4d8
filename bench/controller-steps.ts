/**
 * `npx tsx bench/controller-steps.ts [--replicas 1000] [--nodes R/10] [--services 1]`: what
 * the controllers cost as the cluster grows, measured in CPU time and keys read rather than
 * wall time (which a shared machine distorts). The real controllers run one step at a time
 * on a MemoryStore, as the in-process driver would after each change, for S services of R/S
 * replicas each:
 *   (a) from apply until every replica is placed: rounds of (replica controller, scheduler,
 *       rollout, endpoints, network — the per-service ones once per service), each
 *       controller's steps, CPU ms and keys read;
 *   (b) every replica reported running, then one converged step of each controller (of
 *       every service: the totals);
 *   (c) one replica of the first service reports again (a new report, same standing): the
 *       steps it wakes for that service alone — what one service's step costs in a cluster
 *       of the others;
 *   (d) one replica's report changing only its usage figure (what every running replica
 *       sends every 30 s): every step the change wakes, as the job hook routes it (with the
 *       value before and after), and their CPU — the steady-state cost of one usage report.
 * Super-linear growth shows as (a) rounds growing with R, (b) a step's CPU growing faster
 * than R, or (c) one service's step growing with the cluster rather than the service. Keys
 * read count every key a range returns and every key a getMany asks. The last line is JSON.
 */
import { loadavg } from 'node:os';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../core/keys.js';
import { serviceSpecSchema } from '../core/model/service.js';
import { MemoryStore } from '../db/memory.js';
import type { RangeRequest, Store } from '../db/store.js';
import type { Controller } from '../jobs/controller.js';
import { controllers } from '../jobs/controllers/index.js';
import { route } from '../jobs/controller.js';
import { listFacts } from '../jobs/facts.js';
import { Rng } from '../jobs/sim/rng.js';
import { numberArg } from './support/usage.js';

const arg = numberArg;
const R = arg('replicas', 1000);
const N = arg('nodes', Math.max(1, Math.round(R / 10)));
const S = Math.max(1, Math.min(R, arg('services', 1)));
/** One service keeps the name earlier figures were taken with. */
const names = S === 1 ? ['bench'] : Array.from({ length: S }, (_, i) => `bench-${String(i).padStart(4, '0')}`);
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
    if (p === 'getMany') return async (keys: readonly string[]) => {
      keysRead += keys.length;
      return target.getMany(keys);
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
for (const [i, name] of names.entries()) {
  const replicas = Math.floor(R / S) + (i < R % S ? 1 : 0);
  const spec = serviceSpecSchema.parse({ name, image: 'busybox:1.35', command: ['sleep', '3600'], replicas, resources: { cpuMillis: 100, memoryBytes: 32 * 2 ** 20 } });
  await store.put(buildKey('service', name), encodeFact('service', spec));
}

/** One step of a controller, or of a per-service one for each service: summed. */
async function stepAll(c: Controller, services: readonly string[] = names): Promise<{ steps: number; ms: number; keys: number }> {
  if (!c.subjectOf) return { steps: 1, ...(await step(c)) };
  let sum = { steps: 0, ms: 0, keys: 0 };
  for (const s of services) {
    const r = await step(c, s);
    sum = { steps: sum.steps + 1, ms: sum.ms + r.ms, keys: sum.keys + r.keys };
  }
  return sum;
}

// (a) apply → every replica placed.
const placing = new Map<string, { steps: number; ms: number; keys: number }>();
let rounds = 0;
for (; rounds < 10_000; ) {
  rounds++;
  t += 10;
  for (const name of ['replica', 'scheduler', 'rollout', 'endpoints', 'network']) {
    const s = await stepAll(by.get(name)!);
    const e = placing.get(name) ?? { steps: 0, ms: 0, keys: 0 };
    placing.set(name, { steps: e.steps + s.steps, ms: e.ms + s.ms, keys: e.keys + s.keys });
  }
  if ((await store.range({ prefix: prefixOf('assigned'), countOnly: true })).count >= R) break;
}

// (b) every replica reported running; one step of each controller takes it in, the next is converged.
for (const a of await listFacts(store, 'assigned', prefixOf('assigned'))) {
  await store.put(buildKey('observed', a.value.node, a.value.replica), encodeFact('observed', { replica: a.value.replica, service: a.value.service, node: a.value.node, tenure: a.value.tenure, state: 'running', at: t }));
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
    const s = await stepAll(c);
    first = { ms: first.ms + s.ms, keys: first.keys + s.keys };
    if ((await store.revision()) === before) break;
  }
  t += 10;
  const again = await stepAll(c);
  converged[name] = { firstMs: Math.round(first.ms), convergedMs: Math.round(again.ms), keys: again.keys };
}

// (c) one replica of the first service reports again (its standing unchanged): the
// per-service steps it wakes, for that service only, each run a few times (the median).
const one = (await listFacts(store, 'assigned', prefixOf('assigned'))).find((a) => a.value.service === names[0])!;
const oneService: Record<string, { cpuMs: number; keys: number }> = {};
for (const name of ['replica', 'endpoints', 'rollout']) {
  const runs: { ms: number; keys: number }[] = [];
  for (let i = 0; i < 5; i++) {
    t += 10;
    await store.put(buildKey('observed', one.value.node, one.value.replica), encodeFact('observed', { replica: one.value.replica, service: one.value.service, node: one.value.node, tenure: one.value.tenure, state: 'running', at: t }));
    runs.push(await step(by.get(name)!, names[0]));
  }
  runs.sort((x, y) => x.ms - y.ms);
  oneService[name] = { cpuMs: Number(runs[2]!.ms.toFixed(2)), keys: runs[2]!.keys };
}

// (d) a usage-only report: the steps the job hook would wake for it, each run once.
const usageKey = buildKey('observed', one.value.node, one.value.replica);
const usageRuns: { controller: string; subject?: string; ms: number; keys: number }[] = [];
for (let i = 0; i < 5; i++) {
  t += 10;
  const before = (await store.get(usageKey))!.value;
  const after = encodeFact('observed', { ...decodeFact('observed', usageKey, before), at: t, usage: { cpuMillis: 10 + i, memoryBytes: 2 ** 20 } });
  await store.put(usageKey, after);
  // Routed as the job hook routes a commit: with the value before and after.
  for (const r of route(list, { key: usageKey, deleted: false, before, after })) {
    const c = r.controller;
    const subjects = r.fanout ? (c.subjects ? await c.subjects(store) : []) : [r.subject];
    for (const subject of subjects) {
      const x = await step(c, subject);
      if (i === 4) usageRuns.push({ controller: c.name, ...(subject !== undefined ? { subject } : {}), ms: x.ms, keys: x.keys });
    }
  }
}
const usageReport = { steps: usageRuns.length, cpuMs: Number(usageRuns.reduce((n, x) => n + x.ms, 0).toFixed(2)), byController: Object.fromEntries(usageRuns.map((x) => [x.controller, { cpuMs: Number(x.ms.toFixed(2)), keys: x.keys }])) };

console.log(`${R} replicas in ${S} service(s) on ${N} nodes (MemoryStore, CPU time of this process)`);
console.log(`(a) apply → all placed in ${rounds} round(s):`);
for (const [name, e] of placing) console.log(`    ${name.padEnd(10)} ${String(e.steps).padStart(4)} steps ${String(Math.round(e.ms)).padStart(7)} ms CPU ${String(e.keys).padStart(9)} keys read`);
console.log('(b) every replica running: taking it in, then one converged step');
for (const [name, e] of Object.entries(converged)) console.log(`    ${name.padEnd(10)} ${String(e.firstMs).padStart(6)} ms, then ${String(e.convergedMs).padStart(5)} ms reading ${e.keys} keys`);
console.log(`(c) one replica of ${names[0]} (${Math.ceil(R / S)} replicas) reports again: that service's step (median of 5)`);
for (const [name, e] of Object.entries(oneService)) console.log(`    ${name.padEnd(10)} ${e.cpuMs.toFixed(2).padStart(8)} ms reading ${e.keys} keys`);
console.log(`(d) one replica's usage figure changes: the job hook wakes ${usageReport.steps} steps, ${usageReport.cpuMs.toFixed(2)} ms of CPU (the last of 5): ${usageRuns.map((x) => `${x.controller}${x.subject ? ` ${x.subject}` : ''} ${x.ms.toFixed(2)} ms / ${x.keys} keys`).join(', ')}`);
console.log(JSON.stringify({ bench: 'controller-steps', replicas: R, nodes: N, services: S, rounds, placing: Object.fromEntries([...placing].map(([k, e]) => [k, { steps: e.steps, cpuMs: Math.round(e.ms), keys: e.keys }])), converged, oneService, usageReport, loadAverage: { atStart: loadAtStart, atEnd: load() } }));
