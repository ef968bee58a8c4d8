import { layout, type KeyKind, type Writer } from '../../core/keys.js';
import type { Op, Store, TxnRequest, RangeRequest, WatchRequest, WatchBatch } from '../../db/store.js';

/** Who is writing: the API, one controller (by its name), or one node's agent. */
export type Component = { kind: 'api' } | { kind: 'controller'; name: string } | { kind: 'agent'; node: string };

/** The writer core/keys.ts records for each controller, by the controller's name. */
export const CONTROLLER_WRITERS: Record<string, Writer> = {
  replica: 'replica controller',
  scheduler: 'scheduler',
  node: 'node controller',
  auditor: 'auditor',
  endpoints: 'endpoint controller',
  autoscaler: 'autoscaler',
  rollout: 'rollout controller',
  storage: 'storage controller',
  network: 'network controller',
};

/** Decisions and their repeat counts are written by the controller they name, and evicted by retention. */
const RETENTION = 'retention';

export function describeComponent(c: Component): string {
  return c.kind === 'api' ? 'the API' : c.kind === 'controller' ? `the ${c.name} controller` : `the agent of ${c.node}`;
}

const kinds = Object.keys(layout) as KeyKind[];

/** The kind whose prefix the key (or key prefix) falls under, and its segments after it. */
function kindOf(key: string): { kind: KeyKind; segments: string[] } | undefined {
  for (const kind of kinds) {
    const prefix = layout[kind].prefix;
    if (key.startsWith(prefix)) return { kind, segments: key.slice(prefix.length).split('/') };
  }
  return undefined;
}

/**
 * Why `who` may not write (put, or delete when `deleting`) `key`, or undefined when it may:
 * the rule is core/keys.ts's writer for the key's prefix ("one writer per key prefix",
 * DESIGN rule 1). A key outside the layout has no writer, so nobody may write it.
 */
export function writeProblem(who: Component, key: string, value: string | undefined, deleting: boolean): string | undefined {
  const k = kindOf(key);
  const by = describeComponent(who);
  if (!k) return `${by} wrote ${key}, a key outside core/keys.ts`;
  const writer = layout[k.kind].writer as Writer;
  const refuse = `${by} ${deleting ? 'deleted' : 'wrote'} ${key}, whose writer is the ${writer}`;
  if (writer === 'api') return who.kind === 'api' ? undefined : refuse;
  if (writer === 'agent of <node>') {
    const node = k.segments[(layout[k.kind].params as readonly string[]).indexOf('node')];
    return who.kind === 'agent' && node === who.node ? undefined : `${refuse} (node ${node ?? '?'})`;
  }
  if (who.kind !== 'controller') return refuse;
  if (writer === 'the controller named in the record') {
    if (deleting) return who.name === RETENTION || named(k.kind, k.segments, undefined) === who.name ? undefined : refuse;
    const owner = named(k.kind, k.segments, value);
    return owner === who.name ? undefined : `${by} wrote ${key}, a record of the ${owner ?? 'unnamed'} controller`;
  }
  const mine = CONTROLLER_WRITERS[who.name];
  if (mine === undefined) return `${by} ${deleting ? 'deleted' : 'wrote'} ${key}, but core/keys.ts names no prefix it writes`;
  return mine === writer ? undefined : refuse;
}

/** The controller a decision (from its value) or a repeat count (from its key) names. */
function named(kind: KeyKind, segments: string[], value: string | undefined): string | undefined {
  if (kind === 'repeat') return segments[0];
  if (value === undefined) return undefined;
  try {
    return (JSON.parse(value) as { controller?: string }).controller;
  } catch {
    return undefined;
  }
}

function opProblems(who: Component, ops: Op[] | undefined): string[] {
  const out: string[] = [];
  for (const op of ops ?? []) {
    const p = 'put' in op ? writeProblem(who, op.put.key, op.put.value, false) : 'delete' in op ? writeProblem(who, op.delete.key, undefined, true) : undefined;
    if (p) out.push(p);
  }
  return out;
}

/**
 * A Store handed to one component of the simulation: every write it makes (put, delete, the
 * puts and deletes of either branch of a txn) is attributed to that component and checked
 * against the writer core/keys.ts records for the key's prefix; a write outside it is
 * reported through `refused` (and still passed on: the check observes, it does not repair).
 */
export class AttributingStore implements Store {
  constructor(
    private readonly inner: Store,
    readonly who: Component,
    private readonly refused: (detail: string) => void,
  ) {}

  private check(problems: string[]): void {
    for (const p of problems) this.refused(p);
  }

  revision() { return this.inner.revision(); }
  get(key: string, opts?: { revision?: number }) { return this.inner.get(key, opts); }
  getMany(keys: readonly string[]) { return this.inner.getMany(keys); }
  range(req: RangeRequest) { return this.inner.range(req); }
  put(key: string, value: string, opts?: { lease?: number; prevKv?: boolean }) {
    this.check(opProblems(this.who, [{ put: { key, value } }]));
    return this.inner.put(key, value, opts);
  }
  delete(key: string, opts?: { prefix?: boolean; prevKv?: boolean }) {
    this.check(opProblems(this.who, [{ delete: { key } }]));
    return this.inner.delete(key, opts);
  }
  txn(req: TxnRequest) {
    this.check([...opProblems(this.who, req.success), ...opProblems(this.who, req.failure)]);
    return this.inner.txn(req);
  }
  watch(req: WatchRequest): AsyncIterable<WatchBatch> { return this.inner.watch(req); }
  grantLease(ttl: number) { return this.inner.grantLease(ttl); }
  keepAlive(id: number) { return this.inner.keepAlive(id); }
  revokeLease(id: number) { return this.inner.revokeLease(id); }
  leaseTimeToLive(id: number) { return this.inner.leaseTimeToLive(id); }
  leasesTimeToLive(ids: readonly number[]) { return this.inner.leasesTimeToLive(ids); }
  leases() { return this.inner.leases(); }
  compact(rev: number) { return this.inner.compact(rev); }
  close() { return this.inner.close(); }
}
