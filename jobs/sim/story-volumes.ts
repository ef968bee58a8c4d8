import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import { listFacts } from '../facts.js';
import { why, whyText } from '../decisions/why.js';
import { expectThat, result, running, web, type ScenarioResult } from './scenarios.js';
import { SimWorld, type SimOptions } from './world.js';

const Gi = 1024 ** 3;
const Mi = 1024 ** 2;
const NODES = ['node1', 'node2', 'node3'];

const onNode1 = { attribute: 'node' as const, op: 'in' as const, values: ['node1'] };
// The db prefers node1; the stateless web keeps off it, so a stuck kill there (below) tests
// the stateful rule alone (a stateless replica accepts the fencing window, and a kill that
// keeps failing breaks that window by design).
/** How long a released volume's data stays (keep_for): long enough to undo a delete in the story. */
const KEEP_FOR_MS = 60_000;
const db = web(1, { name: 'db', image: 'api:1', volumes: [{ name: 'data', sizeBytes: 64 * Mi, mountPath: '/data', keepForMs: KEEP_FOR_MS }], placement: { prefer: [{ constraint: onNode1, weight: 50 }] } });
const stateless = web(2, { placement: { restrict: [onNode1] } });

/** Where the db's live replica is placed, and its id. */
async function dbPlacement(w: SimWorld): Promise<{ id: string; node: string } | undefined> {
  const live = (await listFacts(w.store, 'replica', prefixOf('replica', 'db'))).filter((r) => r.value.desired === 'run' && !r.value.retired);
  const id = live[0]?.value.id;
  if (!id || live.length !== 1) return undefined;
  const p = await w.store.get(buildKey('placement', id));
  return p ? { id, node: decodeFact('placement', p.key, p.value).node } : undefined;
}

/** The operator's `cca fence node NAME --confirm`, as the API writes it. */
async function operatorFence(w: SimWorld, node: string): Promise<void> {
  const kv = await w.store.get(buildKey('nodeStatus', node));
  if (!kv) return;
  const status = decodeFact('nodeStatus', kv.key, kv.value);
  await w.api.put(buildKey('fence', node), encodeFact('fence', { node, tenure: status.tenure, assertedBy: 'operator', at: w.t }));
  w.log(`operator fences ${node} (tenure ${status.tenure})`);
}

async function lostDecision(w: SimWorld, replica: string): Promise<string> {
  const kvs = (await w.store.range({ prefix: prefixOf('decision', 'replica', replica) })).kvs.filter((kv) => kv.key.endsWith('-node-lost'));
  return kvs.map((kv) => decodeFact('decision', kv.key, kv.value).action).join('; ');
}

/**
 * sim-volumes: a stateful service (one replica with a volume) beside a stateless one, on
 * three nodes. A crash is replaced on the same node (its volume is there); a partition of
 * its node holds it — no replacement while the old copy may run — until the node returns
 * and confirms the stop; a power loss holds it until an operator fences the node. All
 * along, a check every 100 ms that at most one db copy runs, and the world's invariant that
 * a stateful replacement is placed only with a proof (never on a lease expiry alone).
 * Seeded faults on top: a store outage and an agent restart on another node.
 */
export async function simVolumes(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const notes: string[] = [];
  for (const [i, zone] of ['a', 'b', 'c'].entries()) w.addNode({ name: NODES[i]!, zone, cpuMillis: 4_000, memoryBytes: 8 * Gi });
  const watchCopies = () => {
    w.at(w.t + 100, 'check db copies', async () => {
      const copies = await running(w, 'db');
      if (copies.length > 1) w.violate('stateful-single-copy', `db runs ${copies.length} copies: ${copies.join(', ')}`);
      watchCopies();
    });
  };
  watchCopies();
  const faults = w.rng.fork();
  await w.runFor(3_000);
  await w.apply(db);
  await w.apply(stateless);
  await w.runFor(15_000);

  const first = await dbPlacement(w);
  expectThat(w, !!first && (await running(w, 'db')).length === 1, 'db runs one replica');
  if (!first) return result('sim-volumes', w, notes);
  const home = first.node;
  const vols = await listFacts(w.store, 'volume', prefixOf('volume'));
  expectThat(w, vols.length === 1 && vols[0]!.value.node === home, `the storage controller wants db's volume on ${home} only`);
  const storage = await why(w.store, 'service', 'db');
  expectThat(w, storage.history.some((l) => l.decision.action === `volume data ready on ${home}`), `the agent of ${home} reports the volume and the storage controller records it ready`);

  // 1. A crash: the replacement goes back to the node that holds the volume.
  w.crashReplica(first.id, 1);
  await w.runFor(10_000);
  const second = await dbPlacement(w);
  expectThat(w, !!second && second.id !== first.id && second.node === home, `a crashed db replica is replaced on ${home}, where its volume is`);
  if (!second) return result('sim-volumes', w, notes);

  // A seeded fault elsewhere: an agent restart on another node.
  const other = NODES.filter((n) => n !== home)[faults.int(0, 1)]!;
  w.killAgent(other);
  await w.runFor(faults.int(500, 3_000));
  w.restartAgent(other);

  // 2. A partition: the lease expires, the db is held (its old copy may still run), then
  //    the node returns, confirms the stop under its new tenure, and the db goes back there.
  // Seeded: the node's kills fail for a while, so the old copy outlives its fencing
  // deadline and even the lease — exactly what a lease expiry cannot rule out.
  const stuck = faults.int(0, 12);
  if (stuck > 0) w.failKills(home, stuck);
  w.partition(home, true);
  await w.runFor(30_000);
  const held = await dbPlacement(w);
  expectThat(w, held?.id === second.id, `while ${home} is cut off, db's replica ${second.id} is not replaced`);
  const waiting = await why(w.store, 'replica', second.id);
  notes.push(whyText(waiting));
  expectThat(w, waiting.history[0]!.decision.action === `held: waiting for fencing proof of node ${home}`, `why replica ${second.id} says it waits for a fencing proof of ${home}`);
  if (faults.next() < 0.5) {
    w.setStoreDown(true);
    await w.runFor(faults.int(1_000, 5_000));
    w.setStoreDown(false);
  }
  w.partition(home, false);
  await w.runFor(30_000);
  const third = await dbPlacement(w);
  expectThat(w, !!third && third.id !== second.id && third.node === home, `after ${home} returns, db is replaced there (its volume)`);
  expectThat(w, (await lostDecision(w, second.id)).includes('(proof: node-confirmed)'), `the loss of ${second.id} names the proof node-confirmed`);
  if (!third) return result('sim-volumes', w, notes);

  // 3. A power loss: held until the operator fences the node; then replaced elsewhere.
  w.powerOff(home);
  await w.runFor(30_000);
  expectThat(w, (await dbPlacement(w))?.id === third.id, `while ${home} is off, db is held (no fence yet)`);
  await operatorFence(w, home);
  await w.runFor(20_000);
  const fourth = await dbPlacement(w);
  expectThat(w, !!fourth && fourth.id !== third.id && fourth.node !== home, `after the operator fenced ${home}, db is replaced on another node`);
  expectThat(w, (await lostDecision(w, third.id)).includes('(proof: operator-fence)'), `the loss of ${third.id} names the proof operator-fence`);
  notes.push(whyText(await why(w.store, 'replica', third.id)));
  w.powerOn(home);
  await w.runFor(20_000);
  expectThat(w, (await dbPlacement(w))?.id === fourth?.id, `${home} returns: db does not move back`);

  // A rolling update of the stateful db (its env changes) rolls in place: no surge (a surged
  // copy would start elsewhere on an empty volume), the replacement goes back to the node
  // holding the volume, and the copy check above sees at most one db running throughout.
  await w.apply({ ...db, env: { VERSION: '2' } });
  await w.runFor(20_000);
  const rolled = await dbPlacement(w);
  expectThat(w, !!rolled && rolled.id !== fourth?.id && rolled.node === fourth?.node, `a rolling update of db replaces it in place on ${fourth?.node}`);

  // 4. Deleting the service releases its volumes: the data stays for keep_for, so applying
  // the service again within it finds the data; an operator's hold keeps it past keep_for;
  // without either it is deleted on every node once keep_for has passed.
  const volumes = () => listFacts(w.store, 'volume', prefixOf('volume')).then((r) => r.map((f) => f.value));
  const reports = () => listFacts(w.store, 'observedVolume', prefixOf('observedVolume'));
  await w.deleteService('db');
  await w.runFor(20_000);
  expectThat(w, (await volumes()).every((v) => v.releasing?.why === 'service-deleted') && (await volumes()).length > 0, 'deleting db releases its volumes: deletion pending, not done');
  expectThat(w, (await reports()).length > 0, 'a released volume keeps its data on the node during keep_for');
  await w.apply(db);
  await w.runFor(20_000);
  expectThat(w, (await volumes()).length > 0 && (await volumes()).every((v) => v.releasing === undefined), 'applying db again within keep_for cancels the deletion');
  const back = await dbPlacement(w);
  expectThat(w, !!back && (await volumes()).some((v) => v.node === back.node), 'the re-applied db is placed where its data is');

  await w.deleteService('db');
  await w.runFor(5_000);
  const holding = await volumes();
  for (const v of holding) await w.store.put(buildKey('volumeHold', v.node, v.service, v.volume), encodeFact('volumeHold', { at: w.t }));
  await w.runFor(KEEP_FOR_MS + 10_000);
  expectThat(w, holding.length > 0 && (await volumes()).length === holding.length && (await volumes()).every((v) => v.kept && !v.releasing), 'an operator hold keeps the volume past keep_for');
  await w.store.delete(prefixOf('volumeHold'), { prefix: true });
  await w.runFor(KEEP_FOR_MS / 2);
  expectThat(w, (await volumes()).length === holding.length, 'releasing the hold starts keep_for again');
  await w.runFor(KEEP_FOR_MS / 2 + 20_000);
  expectThat(w, (await volumes()).length === 0, 'keep_for after the release, the volumes are deleted');
  expectThat(w, (await reports()).length === 0, 'and the agents delete them');
  await w.checkQuiescent();
  return result('sim-volumes', w, notes);
}
