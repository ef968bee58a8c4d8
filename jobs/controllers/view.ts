import { prefixOf, type KeyKind } from '../../core/keys.js';
import type { Store } from '../../db/store.js';
import { listFacts, type Fact } from '../facts.js';

/**
 * What the cluster looks like to the scheduler, node controller and auditor: every fact
 * they decide on, read in one go and indexed. Each entry keeps its key-value so the txn
 * that acts on it can compare it (read-set rule).
 */
export interface ClusterView {
  nodes: Map<string, Fact<'node'>>;
  statuses: Map<string, Fact<'nodeStatus'>>;
  allocations: Map<string, Fact<'allocation'>>;
  audits: Map<string, Fact<'audit'>>;
  /** Operators' intents (cordon, drain, remove), written by the API. */
  nodeOps: Map<string, Fact<'nodeOp'>>;
  /** Keyed by replica id. */
  assignments: Map<string, Fact<'assigned'>>;
  /** Assignments per node. */
  byNode: Map<string, Fact<'assigned'>[]>;
}

export function indexBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T> {
  return new Map(items.map((t) => [key(t), t]));
}

/** Items grouped under a key, each group in the items' order. */
export function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of items) {
    const k = key(t);
    const list = out.get(k);
    if (list) list.push(t);
    else out.set(k, [t]);
  }
  return out;
}

/** Every fact of each kind, the prefixes read in parallel: for steps that join whole prefixes in memory. */
export function listEvery<const K extends readonly KeyKind[]>(store: Store, ...kinds: K): Promise<{ -readonly [I in keyof K]: Fact<K[I]>[] }> {
  return Promise.all(kinds.map((k) => listFacts(store, k, prefixOf(k)))) as Promise<{ -readonly [I in keyof K]: Fact<K[I]>[] }>;
}

export async function readClusterView(store: Store): Promise<ClusterView> {
  const [nodes, statuses, allocations, audits, assigned, nodeOps] = await listEvery(store, 'node', 'nodeStatus', 'allocation', 'audit', 'assigned', 'nodeOp');
  return {
    nodes: indexBy(nodes, (n) => n.value.name),
    statuses: indexBy(statuses, (s) => s.value.node),
    allocations: indexBy(allocations, (a) => a.value.node),
    audits: indexBy(audits, (a) => a.value.node),
    nodeOps: indexBy(nodeOps, (o) => o.value.node),
    assignments: indexBy(assigned, (a) => a.value.replica),
    byNode: groupBy(assigned, (a) => a.value.node),
  };
}

/** A node is ready when the node controller says so under the node's current tenure. */
export function isReady(view: Pick<ClusterView, 'nodes' | 'statuses'>, node: string): boolean {
  const n = view.nodes.get(node);
  const s = view.statuses.get(node);
  return !!n && !!s && s.value.state === 'ready' && s.value.tenure === n.kv.createRevision;
}

/** FNV-1a over strings: a short, stable digest for a decision's basis. */
export function digest(parts: readonly string[]): string {
  let h = 0x811c9dc5;
  for (const p of parts) {
    for (let i = 0; i < p.length; i++) {
      h ^= p.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    h ^= 0x1f;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** Cordoned or draining (an operator's intent): the node takes no new placements. */
export function isCordoned(view: Pick<ClusterView, 'nodeOps'>, node: string): boolean {
  const op = view.nodeOps.get(node)?.value;
  return !!op && (op.cordoned || op.drain);
}
