import { CcaError } from '../core/diagnostics/index.js';
import { MemoryStore, type MemoryStoreOptions } from './memory.js';
import type { Store } from './store.js';
import type { PostgresStoreOptions } from './postgres/store.js';
import type { EtcdStoreOptions } from './etcd/store.js';
import type { SqliteStoreOptions } from './sqlite/store.js';

export type { Store } from './store.js';
export * from './store.js';

export interface OpenStoreOptions {
  memory?: MemoryStoreOptions;
  postgres?: PostgresStoreOptions;
  etcd?: EtcdStoreOptions;
  sqlite?: SqliteStoreOptions;
}

/**
 * Open a store by URL: `memory:`, `sqlite:./file.db` (or `sqlite::memory:`), `postgres://…` (or `postgresql://…`), `etcd://host:port/prefix` (or `etcd+https://host:port/prefix?ca=FILE&cert=FILE&key=FILE`).
 * Backends load lazily so that a process (or the browser) pulls in only the driver it uses.
 */
export async function openStore(url: string, opts: OpenStoreOptions = {}): Promise<Store> {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'memory':
      return new MemoryStore(opts.memory);
    case 'sqlite': {
      const { SqliteStore } = await import('./sqlite/store.js');
      return SqliteStore.open(url, opts.sqlite);
    }
    case 'postgres':
    case 'postgresql': {
      const { PostgresStore } = await import('./postgres/store.js');
      return PostgresStore.open(url, opts.postgres);
    }
    case 'etcd':
    case 'etcd+https': {
      const { EtcdStore } = await import('./etcd/store.js');
      return EtcdStore.open(url, opts.etcd);
    }
    default:
      throw new CcaError('CCA-E0116', { url, reason: scheme ? `unknown scheme ${scheme}:` : 'no scheme' });
  }
}
