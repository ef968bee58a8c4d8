import { layout, prefixOf, type KeyKind } from '../core/keys.js';
import { StoreMirror, type MirrorOptions } from '../db/mirror.js';
import type { Store } from '../db/store.js';

/**
 * What controller steps read whole, step after step, and the agents' node credentials (each
 * agent request is authenticated by one: handlers/auth.ts principalOf): every kind but the
 * append-only histories (read whole only by retention and `why`, and the bulk of the store's
 * bytes) and people's tokens (read from the store at each request, so a revocation holds at
 * once on every pod).
 */
const NOT_MIRRORED: ReadonlySet<KeyKind> = new Set<KeyKind>(['decision', 'repeat', 'event', 'authToken']);

export const STEP_MIRROR_PREFIXES: readonly string[] = (Object.keys(layout) as KeyKind[]).filter((k) => !NOT_MIRRORED.has(k)).map((k) => prefixOf(k));

/** The pod's one read mirror for its controller steps (db/mirror.ts), following `store`. */
export function startStepMirror(store: Store, opts: Omit<MirrorOptions, 'prefixes'> = {}): StoreMirror {
  return new StoreMirror(store, { ...opts, prefixes: STEP_MIRROR_PREFIXES }).start();
}
