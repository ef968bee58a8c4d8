import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact, prefixOf } from '../../core/keys.js';
import { EtcdStore } from '../../db/etcd/store.js';
import { applyServices } from '../../handlers/apply.js';
import { newSecretKey, parseKeyring, SecretBox } from '../../handlers/secret-box.js';
import { controllers } from '../../jobs/controllers/index.js';
import { MAX_TXN_BYTES } from '../../jobs/controllers/scheduler/batch.js';
import { startTestEtcd } from '../support/etcd-server.js';
import { largestSpec } from '../support/largest-spec.js';
import { needs } from '../support/prerequisites.js';

const box = new SecretBox(parseKeyring(newSecretKey('k1'), 'test'));

/**
 * Issue 20: the largest step a controller produces must fit etcd's request limit
 * (--max-request-bytes, 1.5 MiB by default; CCA-E0121), which no other backend has. The
 * largest is the scheduler placing many replicas of the largest spec on one node (each
 * assignment holds the spec): its placements are split by bytes (MAX_TXN_BYTES). Each step
 * runs on the EtcdStore directly, so a txn etcd refuses fails the test.
 */
describe.runIf(needs('etcd'))('controller steps on a real etcd', () => {
  test('32 replicas of the largest spec on one node: every step fits the request limit, all are placed', { timeout: 240_000 }, async () => {
    const etcd = await startTestEtcd({ fresh: true });
    const store = await EtcdStore.open(`etcd://${etcd.hostPort}/cca/steps`);
    try {
      const { id } = await store.grantLease(120);
      await store.put(buildKey('node', 'n1'), encodeFact('node', { name: 'n1', zone: 'a', capacity: { cpuMillis: 4_000, memoryBytes: 8 * 1024 ** 3 }, images: { 'web:1': 'sha256:1' } }), { lease: id });
      await applyServices(store, { kind: 'specs', services: [largestSpec('big', 32)], prune: false }, false, box);
      const all = controllers({ retention: false });
      let t = Date.now();
      const placed = async () => (await store.range({ prefix: prefixOf('assigned', 'n1'), countOnly: true })).count;
      for (let round = 0; round < 80 && (await placed()) < 32; round++) {
        t += 1_000;
        for (const c of all) {
          const subjects = c.subjects ? await c.subjects(store) : [undefined];
          for (const s of subjects) await c.reconcile({ store, now: t, random: Math.random, ...(s !== undefined ? { subject: s } : {}) });
        }
      }
      expect(await placed()).toBe(32);
      // Measured: one assignment is about a third of the budget, so a step places one or two per txn.
      const one = (await store.range({ prefix: prefixOf('assigned', 'n1'), limit: 1 })).kvs[0]!;
      expect(Buffer.byteLength(one.value)).toBeGreaterThan(MAX_TXN_BYTES / 3);
    } finally {
      await store.close();
      await etcd.stop();
    }
  });
});
