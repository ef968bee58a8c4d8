import { expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { controllers, scheduler } from '../../jobs/controllers/index.js';
import { Bench } from './harness.js';

/**
 * A scheduler step that releases what retired replicas held reads again and places the
 * pending ones on the view the releases left, in the same step: a lost node's replacements
 * used to wait for the next step (one job later, ~0.5 s on a busy pod: bench:system's
 * recovery timeline).
 */
test('one scheduler step releases a retired replica and places its replacement in the room it freed', async () => {
  const b = new Bench();
  await b.register('n1', 'a', 4_000, 1); // room for one replica: the replacement fits only after the release
  const all = controllers({ retention: false });
  await b.apply({ name: 'web', image: 'web:1', replicas: 1 });
  await b.settle(all);
  const [old] = await b.replicas('web');
  expect((await b.assignments('n1')).map((a) => a.replica)).toEqual([old!.id]);

  // What the replica controller writes when a replica is replaced: the old record retired, a new one to run.
  await b.store.put(buildKey('replica', 'web', old!.id), encodeFact('replica', { ...old!, desired: 'stop', retired: true }));
  const next = 'web-zzzzzzzz';
  b.t += 1_000;
  await b.store.put(buildKey('replica', 'web', next), encodeFact('replica', { ...old!, id: next, createdAt: b.t }));

  await b.step(scheduler);
  expect((await b.assignments('n1')).map((a) => a.replica)).toEqual([next]);
  const alloc = (await b.fact('allocation', 'n1'))!;
  expect(alloc.replicas).toEqual([next]);
});
