/**
 * `npx tsx bench/network.ts [--nodes N] [--replicas N]`: the network controller's step on a
 * MemoryStore cluster where a tenth of the replicas belong to policed services (each
 * admitting one client service). Reports the first step (every rule set written), a
 * converged step (nothing written) and the step after one client replica exits. The last
 * line is machine-readable JSON.
 */
import { performance } from 'node:perf_hooks';
import { buildKey, encodeFact, prefixOf } from '../core/keys.js';
import { serviceSpecSchema } from '../core/model/service.js';
import { MemoryStore } from '../db/memory.js';
import { networkController } from '../jobs/controllers/network.js';
import { listFacts } from '../jobs/facts.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const NODES = arg('nodes', 100);
const REPLICAS = arg('replicas', 2_000);
const PER_SERVICE = 20;
const Mi = 1024 ** 2;

async function main(): Promise<void> {
  const store = new MemoryStore();
  const tenures = new Map<string, number>();
  for (let n = 0; n < NODES; n++) {
    const name = `n${n}`;
    const r = await store.put(buildKey('node', name), encodeFact('node', { name, zone: 'a', capacity: { cpuMillis: 64_000, memoryBytes: 256 * 1024 * Mi }, images: { 'web:1': 'sha256:1' } }));
    tenures.set(name, r.revision);
    await store.put(buildKey('nodeStatus', name), encodeFact('nodeStatus', { node: name, tenure: r.revision, state: 'ready', since: 0 }));
  }
  const services = Math.ceil(REPLICAS / PER_SERVICE);
  const specs = Array.from({ length: services }, (_, i) =>
    serviceSpecSchema.parse({
      name: `svc${i}`,
      image: 'web:1',
      replicas: PER_SERVICE,
      resources: { cpuMillis: 100, memoryBytes: 64 * Mi },
      ports: [{ name: 'http', container: 8080 }],
      // Every tenth service is policed and admits the next one.
      ...(i % 10 === 0 ? { network: { allow: [{ service: `svc${i + 1}`, port: 'http' }] } } : {}),
    }),
  );
  for (const s of specs) await store.put(buildKey('service', s.name), encodeFact('service', s));
  let k = 0;
  for (const s of specs) {
    for (let j = 0; j < PER_SERVICE; j++, k++) {
      const node = `n${k % NODES}`;
      const tenure = tenures.get(node)!;
      const replica = `${s.name}-${String(j).padStart(8, '0')}`;
      await store.put(buildKey('assigned', node, replica), encodeFact('assigned', { replica, service: s.name, node, tenure, resources: s.resources, specRevision: 1, spec: s, desired: 'run', placedAt: 0 }));
      await store.put(buildKey('placement', replica), encodeFact('placement', { replica, service: s.name, node, tenure, at: 0 }));
      await store.put(buildKey('observed', node, replica), encodeFact('observed', { replica, service: s.name, node, tenure, state: 'running', address: `10.${Math.floor(k / 65_536) % 256}.${Math.floor(k / 256) % 256}.${k % 256}`, at: 0 }));
    }
  }
  const step = async () => {
    const before = await store.revision();
    const t = performance.now();
    await networkController.reconcile({ store, now: 1, random: () => 0.5 });
    return { ms: performance.now() - t, revisions: (await store.revision()) - before };
  };
  const first = await step();
  const converged = await step();
  const victim = (await listFacts(store, 'observed', prefixOf('observed'))).find((o) => o.value.service === 'svc1')!;
  await store.put(victim.key, encodeFact('observed', { ...victim.value, state: 'exited', exitCode: 1 }));
  const change = await step();
  const rows = [
    ['first step (every rule set)', first],
    ['converged step', converged],
    ['one client exits', change],
  ] as const;
  console.log(`network controller, ${NODES} nodes, ${REPLICAS} replicas (${services} services, ${Math.ceil(services / 10)} policed)`);
  for (const [what, r] of rows) console.log(`${what.padEnd(30)} ${r.ms.toFixed(1).padStart(8)} ms  ${String(r.revisions).padStart(5)} revision(s)`);
  console.log(JSON.stringify({ nodes: NODES, replicas: REPLICAS, firstMs: Math.round(first.ms), firstRevisions: first.revisions, convergedMs: Math.round(converged.ms), convergedRevisions: converged.revisions, changeMs: Math.round(change.ms), changeRevisions: change.revisions }));
}

await main();
