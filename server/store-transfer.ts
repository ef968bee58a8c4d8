import { redactUrl } from '../core/redact.js';
import { openStore } from '../db/index.js';
import type { Store } from '../db/store.js';
import type { Progress } from '../db/transfer/format.js';
import { readSnapshotFile, writeSnapshotFile } from '../db/transfer/file.js';
import { storeSource } from '../db/transfer/read-store.js';
import { restoreInto } from '../db/transfer/restore.js';

/** A store opened for a one-off DBA command: no lease reaper of its own is needed beyond the backend's default. */
async function withStore<T>(url: string, work: (s: Store) => Promise<T>): Promise<T> {
  const store = await openStore(url);
  try {
    return await work(store);
  } finally {
    await store.close().catch(() => undefined);
  }
}

/** `cca store snapshot --store URL FILE`. */
export function snapshotToFile(url: string, file: string, progress?: Progress) {
  return withStore(url, async (s) => {
    const source = await storeSource(s);
    const written = await writeSnapshotFile(source, file, progress);
    return { ...written, revision: source.revision, dropped: source.dropped };
  });
}

/** `cca store restore --store URL FILE [--overwrite]`: the file is checked whole before the store is opened. */
export async function restoreFromFile(url: string, file: string, opts: { overwrite?: boolean; progress?: Progress } = {}) {
  const source = await readSnapshotFile(file);
  return withStore(url, async (s) => ({ ...(await restoreInto(s, source, { ...opts, target: redactUrl(url) })), sourceRevision: source.revision }));
}

/** `cca store copy --from URL --to URL [--overwrite]`: no file in between. */
export function copyStore(from: string, to: string, opts: { overwrite?: boolean; progress?: Progress } = {}) {
  return withStore(from, (src) =>
    withStore(to, async (dst) => {
      const source = await storeSource(src);
      return { ...(await restoreInto(dst, source, { ...opts, target: redactUrl(to) })), sourceRevision: source.revision, dropped: source.dropped };
    }),
  );
}
