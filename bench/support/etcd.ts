import os from 'node:os';
import { openStore } from '../../db/index.js';
import type { Store } from '../../db/store.js';
import { startTestEtcd } from '../../test/support/etcd-server.js';
import { messageOf } from '../../core/diagnostics/index.js';

/**
 * A real etcd on this machine for the EtcdStore column: ETCD_ENDPOINTS if set, else the
 * `etcd` binary with its data on disk (like Postgres's) and etcd's default raft timings.
 * Null when neither is available, so the table says what it could measure.
 */
export async function startBenchEtcd(): Promise<{ name: string; open(): Promise<Store>; stop(): Promise<void> } | null> {
  try {
    const etcd = await startTestEtcd({ raft: 'default', dataDirBase: os.tmpdir() });
    return {
      name: 'EtcdStore',
      open: () => openStore(`etcd://${etcd.hostPort}/bench-${Date.now()}`),
      stop: () => etcd.stop(),
    };
  } catch (e) {
    process.stderr.write(`no etcd for the benchmark: ${messageOf(e)}\n`);
    return null;
  }
}
