import { afterAll } from 'vitest';
import { EtcdStore } from '../../db/etcd/store.js';
import { startTestEtcd, type RunningEtcd } from '../support/etcd-server.js';
import { defineConformance } from './conformance.js';

/*
 * Every test gets its own etcd: the suite expects a fresh store at revision 1 with nothing
 * compacted, and etcd's revision and compaction are cluster-wide, so a new key prefix on a
 * shared etcd is not fresh. An etcd with its data dir on /dev/shm is healthy in ~0.1 s;
 * the next one starts while the current test runs.
 */
let spare: Promise<RunningEtcd> | undefined;
function nextEtcd(): Promise<RunningEtcd> {
  const e = spare ?? startTestEtcd({ fresh: true });
  spare = startTestEtcd({ fresh: true });
  return e;
}
afterAll(async () => {
  await (await spare)?.stop();
});

defineConformance({
  name: 'etcd',
  open: async () => {
    const etcd = await nextEtcd();
    const store = await EtcdStore.open(`etcd://${etcd.hostPort}/cca/conformance`);
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      await etcd.stop();
    };
    return store;
  },
});
