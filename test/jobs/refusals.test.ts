import { afterEach, expect, test } from 'vitest';
import { CcaError } from '../../core/diagnostics/error.js';
import type { Diagnostic } from '../../core/diagnostics/types.js';
import { buildKey, encodeFact, prefixOf } from '../../core/keys.js';
import { serviceSpecSchema, type ServiceSpecInput } from '../../core/model/service.js';
import { MemoryStore } from '../../db/memory.js';
import type { TxnRequest, TxnResponse } from '../../db/store.js';
import { controllers } from '../../jobs/controllers/index.js';
import { startDriver, type Driver } from '../../jobs/driver.js';
import { why } from '../../jobs/decisions/why.js';
import { waitFor } from '../support/wait.js';

/** A store that refuses, as too large, every write of one service's volume records. */
class PoisonStore extends MemoryStore {
  refusals = 0;
  constructor(private readonly poisoned: string) {
    super();
  }
  override async txn(req: TxnRequest): Promise<TxnResponse> {
    const hit = req.success.find((op) => 'put' in op && op.put.key.startsWith(prefixOf('volume')) && op.put.key.includes(`/${this.poisoned}/`));
    if (hit && 'put' in hit) {
      this.refusals++;
      throw new CcaError('CCA-E0104', { key: JSON.stringify(hit.put.key), bytes: 2_000_000, maxBytes: 1_572_864 });
    }
    return super.txn(req);
  }
}

const drivers: Driver[] = [];
const stores: MemoryStore[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.stop();
  for (const s of stores.splice(0)) await s.close();
});

const stateful = (name: string): ServiceSpecInput => ({ name, image: 'web:1', replicas: 2, resources: { cpuMillis: 10, memoryBytes: 1024 * 1024 }, volumes: [{ name: 'data', sizeBytes: 1024, mountPath: '/data' }] });

test("one service's refused write is reported once and backed off; another service converges meanwhile", async () => {
  // "apoison" sorts first: its volume is the storage controller's first write of every step.
  const store = new PoisonStore('apoison');
  stores.push(store);
  const { id } = await store.grantLease(30);
  await store.put(buildKey('node', 'n1'), encodeFact('node', { name: 'n1', zone: 'a', capacity: { cpuMillis: 4_000, memoryBytes: 8 * 1024 ** 3 }, images: { 'web:1': 'sha256:1' } }), { lease: id });
  const reports: Diagnostic[] = [];
  const driver = startDriver({ store, controllers: controllers({ retention: false }), onDiagnostic: (d) => reports.push(d) });
  drivers.push(driver);
  for (const s of [stateful('apoison'), stateful('web')]) {
    const spec = serviceSpecSchema.parse(s);
    await store.put(buildKey('service', spec.name), encodeFact('service', spec));
  }
  await waitFor("web's volume on n1", () => store.get(buildKey('volume', 'n1', 'web', 'data')));
  await waitFor('the refused write retried three times', () => store.refusals >= 3);
  const refused = reports.filter((d) => d.code === 'CCA-E0450');
  expect(refused).toHaveLength(1);
  expect(refused[0]!.params).toMatchObject({ controller: 'storage', subject: buildKey('volume', 'n1', 'apoison', 'data') });
  expect(String(refused[0]!.params.reason)).toMatch(/^CCA-E0104 /);
  expect(reports.filter((d) => d.code !== 'CCA-E0450')).toEqual([]);
  expect(await store.get(buildKey('volume', 'n1', 'apoison', 'data'))).toBeNull();
  // `cca why service apoison` shows the refusal: one decision, coded, however often it was refused.
  const w = await why(store, 'service', 'apoison');
  const shown = w.history.filter((h) => h.decision.action === 'write refused');
  expect(shown).toHaveLength(1);
  expect(shown[0]!.decision.controller).toBe('storage');
  expect(shown[0]!.decision.reasons[0]).toMatch(/^CCA-E0450 .*CCA-E0104/);
  expect((await why(store, 'service', 'web')).history.some((h) => h.decision.action === 'write refused')).toBe(false);
  // The poisoned service's other controllers kept moving too: both services are placed.
  const assigned = (await store.range({ prefix: prefixOf('assigned', 'n1') })).kvs.map((kv) => kv.key);
  expect(assigned.filter((k) => k.includes('/web-'))).toHaveLength(2);
  expect(assigned.filter((k) => k.includes('/apoison-'))).toHaveLength(2);
});

test('a step with refused writes is backed off like a failure, doubling, and cleared by a clean step', async () => {
  const { StepBook } = await import('../../jobs/step-runner.js');
  const { makeDiagnostic } = await import('../../core/diagnostics/error.js');
  const sink: Diagnostic[] = [];
  const book = new StepBook((d) => sink.push(d));
  const refused = [makeDiagnostic('CCA-E0450', { controller: 'storage', subject: '/volumes/n1/a/d', reason: 'CCA-E0104 too large' })];
  const half = () => 0.5;
  const out = { ok: true as const, wake: { at: 1_100 }, writes: 0, refused };
  expect(book.settle('storage', out, 1_000, half)).toBe(1_100);
  expect(book.settle('storage', out, 1_000, half)).toBe(1_200);
  expect(book.settle('storage', out, 1_000, half)).toBe(1_400);
  expect(sink).toHaveLength(1);
  expect(book.settle('storage', { ok: true, wake: {}, writes: 0 }, 1_000, half)).toBeUndefined();
  expect(book.settle('storage', out, 1_000, half)).toBe(1_100);
});
