import { expect, test } from 'vitest';
import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import { nodeController, replicaController, replicaControllerWith, schedulerWith } from '../../jobs/controllers/index.js';
import { CREATE_PER_TXN } from '../../jobs/controllers/replica.js';
import { decisionKey } from '../../jobs/decisions/record.js';
import { Bench } from './harness.js';

/** A scale-up's records in as few steps as the txn limit allows, every one caused by the step's one decision. */
test('a scale-up of 120 is one step of three txns under one decision; none lands when that decision does not', async () => {
  const b = new Bench();
  await b.apply({ name: 'web', image: 'web:1', replicas: 120, resources: { cpuMillis: 10 } });
  // A decision of the same instant and tag already exists: the first txn's compare fails,
  // and the txns that would cite it must not create replicas under somebody else's decision.
  const sd = decisionKey('service', 'web', b.t, 'rc-scale-up');
  await b.store.put(sd, JSON.stringify({ placeholder: true }));
  await b.step(replicaController, 'web');
  expect(await b.replicas('web')).toHaveLength(0);

  b.t += 1;
  const before = await b.store.revision();
  const wake = await b.step(replicaController, 'web');
  expect(wake.at).toBeUndefined();
  expect(await b.replicas('web')).toHaveLength(120);
  expect((await b.store.revision()) - before).toBe(Math.ceil(120 / CREATE_PER_TXN));
  const scaleKey = decisionKey('service', 'web', b.t, 'rc-scale-up');
  for (const kv of (await b.store.range({ prefix: prefixOf('decision', 'replica') })).kvs) {
    expect(decodeFact('decision', kv.key, kv.value).cause).toEqual({ decision: scaleKey });
  }
  expect(await b.store.get(buildKey('decision', 'service', 'web', scaleKey.slice(scaleKey.lastIndexOf('/') + 1)))).not.toBeNull();
});

/** A server pod keeps a step's txns in flight together (server/start.ts); the decision still goes first. */
test('with txns in flight together, a scale-up commits its decision alone first, then the rest at once; none when the decision fails', async () => {
  const b = new Bench();
  await b.apply({ name: 'web', image: 'web:1', replicas: 500, resources: { cpuMillis: 10 } });
  // The step's decision key is taken: its first txn fails, and nothing may follow it.
  await b.store.put(decisionKey('service', 'web', b.t, 'rc-scale-up'), JSON.stringify({ placeholder: true }));
  const events: string[] = [];
  let inFlight = 0;
  let most = 0;
  const txn = b.store.txn.bind(b.store);
  b.store.txn = async (req) => {
    const n = events.filter((e) => e.startsWith('start')).length;
    events.push(`start ${n}`);
    most = Math.max(most, ++inFlight);
    try {
      return await txn(req);
    } finally {
      inFlight--;
      events.push(`end ${n}`);
    }
  };
  const concurrent = replicaControllerWith({ txnConcurrency: 16 });
  await b.step(concurrent, 'web');
  expect(events).toEqual(['start 0', 'end 0']);
  expect(await b.replicas('web')).toHaveLength(0);

  events.length = 0;
  b.t += 1;
  await b.step(concurrent, 'web');
  const txns = Math.ceil(500 / CREATE_PER_TXN);
  expect(events.filter((e) => e.startsWith('start'))).toHaveLength(txns);
  expect(events.slice(0, 2)).toEqual(['start 0', 'end 0']);
  expect(most).toBe(txns - 1);
  expect(await b.replicas('web')).toHaveLength(500);
  const scaleKey = decisionKey('service', 'web', b.t, 'rc-scale-up');
  for (const kv of (await b.store.range({ prefix: prefixOf('decision', 'replica') })).kvs) {
    expect(decodeFact('decision', kv.key, kv.value).cause).toEqual({ decision: scaleKey });
  }
});

/** A server pod's scheduler builds its next txns while others commit (server/step-options.ts). */
test('a scheduler step building its txns ahead, several in flight, writes exactly what one txn at a time does', async () => {
  const cluster = async () => {
    const b = new Bench();
    for (let i = 0; i < 40; i++) await b.register(`n${String(i).padStart(2, '0')}`, ['a', 'b', 'c'][i % 3], 2_000);
    await b.step(nodeController());
    await b.apply({ name: 'web', image: 'web:1', replicas: 150, resources: { cpuMillis: 100 } });
    await b.apply({ name: 'api', image: 'web:1', replicas: 90, resources: { cpuMillis: 250 }, placement: { require: [{ attribute: 'zone', op: 'in', values: ['a', 'b'] }] } });
    await b.step(replicaController, 'web');
    await b.step(replicaController, 'api');
    return b;
  };
  const written = async (b: Bench) => {
    const out: string[] = [];
    for (const kind of ['assigned', 'placement', 'allocation', 'decision'] as const) {
      for (const kv of (await b.store.range({ prefix: prefixOf(kind) })).kvs) out.push(`${kv.key} ${kv.value}`);
    }
    return out;
  };
  const one = await cluster();
  await one.step(schedulerWith({}));
  const ahead = await cluster();
  let txns = 0;
  const txn = ahead.store.txn.bind(ahead.store);
  ahead.store.txn = (req) => (txns++, txn(req));
  await ahead.step(schedulerWith({ txnConcurrency: 4, turn: () => new Promise<void>((resolve) => setImmediate(resolve)) }));
  expect((await ahead.assignments()).length).toBe(240);
  expect(txns).toBeGreaterThan(4);
  expect(await written(ahead)).toEqual(await written(one));
});
