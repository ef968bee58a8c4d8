import { decodeFact, parseKey, prefixOf } from '../../core/keys.js';
import { desiredReplicas } from '../../core/model/resolve.js';
import { ranToCompletion } from '../../core/model/replica-outcome.js';
import type { Store, WatchBatch } from '../../db/store.js';
import { listFacts } from '../facts.js';
import { why } from '../decisions/why.js';
import { readClusterView, isReady } from '../controllers/view.js';
import { candidatesOf, demandOf, spreadCounts } from '../controllers/scheduler/plan-placements.js';
import { place } from '../placement/place.js';
import type { SimAgent } from './agent.js';

/** A broken invariant: its name, when, and what was seen. */
export interface Violation {
  invariant: string;
  at: number;
  detail: string;
}

export const INVARIANTS = {
  noOvercommit: 'no-overcommit',
  placedOnReady: 'placed-on-ready-node',
  singleCopy: 'single-copy',
  fencedBeforeReplacement: 'fenced-before-replacement',
  lostReplaced: 'lost-replaced',
  convergedWritesNothing: 'converged-writes-nothing',
  chains: 'decision-chains',
  eventuallyRunning: 'eventually-running',
  storeReportedOnce: 'store-failure-reported-once',
  statefulProven: 'stateful-replaced-only-with-proof',
  singleWriter: 'single-writer',
} as const;

/** What the world mirrors from the watch: assignments and node capacities, decoded once per change. */
export interface Mirror {
  assigned: Map<string, { node: string; cpuMillis: number; memoryBytes: number }>;
  capacity: Map<string, { cpuMillis: number; memoryBytes: number }>;
}

/** No node's assignments add up to more than its declared capacity. */
export function checkOvercommit(m: Mirror): string[] {
  const sums = new Map<string, { cpu: number; mem: number }>();
  for (const a of m.assigned.values()) {
    const s = sums.get(a.node) ?? { cpu: 0, mem: 0 };
    s.cpu += a.cpuMillis;
    s.mem += a.memoryBytes;
    sums.set(a.node, s);
  }
  const out: string[] = [];
  for (const [node, s] of sums) {
    const cap = m.capacity.get(node);
    if (cap && (s.cpu > cap.cpuMillis || s.mem > cap.memoryBytes)) out.push(`${node} holds ${s.cpu}m cpu / ${s.mem} bytes, capacity ${cap.cpuMillis}m / ${cap.memoryBytes}`);
  }
  return out;
}

/** Every new assignment in a batch: its node was ready under the assignment's tenure just before. */
export async function checkNewAssignments(store: Store, batch: WatchBatch): Promise<string[]> {
  const out: string[] = [];
  for (const e of batch.events) {
    if (e.type !== 'put' || e.kv.version !== 1 || parseKey(e.kv.key)?.kind !== 'assigned') continue;
    const a = decodeFact('assigned', e.kv.key, e.kv.value);
    const before = batch.revision - 1;
    const node = await store.get(`/nodes/${a.node}`, { revision: before });
    const st = await store.get(`/node-status/${a.node}`, { revision: before });
    const status = st ? decodeFact('nodeStatus', st.key, st.value) : undefined;
    if (!node || node.createRevision !== a.tenure || status?.state !== 'ready' || status.tenure !== a.tenure) {
      out.push(`${a.replica} placed on ${a.node} (tenure ${a.tenure}) at revision ${batch.revision}, but the node was ${node ? `at tenure ${node.createRevision}` : 'not registered'} and ${status ? `${status.state} for tenure ${status.tenure}` : 'without status'}`);
    }
  }
  return out;
}

/**
 * A replacement of a stateful replica (one with a volume) lost with its node is placed only
 * with a proof that the old copy stopped — the node confirmed it or an operator fenced the
 * node, never a lease expiry alone — and only while the old copy runs nowhere.
 */
export function checkStatefulPlacements(batch: WatchBatch, replaces: ReadonlyMap<string, string>, lostProofs: ReadonlyMap<string, ReadonlySet<string>>, agents: Iterable<SimAgent>): string[] {
  const out: string[] = [];
  for (const e of batch.events) {
    if (e.type !== 'put' || e.kv.version !== 1 || parseKey(e.kv.key)?.kind !== 'assigned') continue;
    const a = decodeFact('assigned', e.kv.key, e.kv.value);
    const old = replaces.get(a.replica);
    if (a.spec.volumes.length === 0 || !old) continue;
    for (const agent of agents) {
      if (agent.runtime.alive().some((w) => w.replica === old)) out.push(`${a.replica} placed on ${a.node} while ${old}, the stateful replica it replaces, still runs on ${agent.record.name}`);
    }
    // The proofs the world saw on the old replica's /lost/ records (deleted once released).
    const proofs = lostProofs.get(old);
    const proven = proofs?.has('node-confirmed') || proofs?.has('operator-fence');
    if (!proven) out.push(`${a.replica} replaces stateful ${old} without a proof of its stop (a lease expiry alone)`);
  }
  return out;
}

/** A replica id runs on at most one machine. */
export function checkSingleCopy(agents: Iterable<SimAgent>): string[] {
  const where = new Map<string, string>();
  const out: string[] = [];
  for (const a of agents) {
    for (const w of a.runtime.alive()) {
      const other = where.get(w.replica);
      if (other) out.push(`${w.replica} runs on ${other} and ${a.record.name}`);
      where.set(w.replica, a.record.name);
    }
  }
  return out;
}

/** At quiescence: nothing lost is still live, and every live replica is placed on a ready node. */
export async function checkLostReplaced(store: Store): Promise<string[]> {
  const out: string[] = [];
  const view = await readClusterView(store);
  for (const l of await listFacts(store, 'lost', prefixOf('lost'))) {
    out.push(`${l.value.replica} was declared lost with ${l.value.node} but is still recorded (not replaced and released)`);
  }
  for (const r of await listFacts(store, 'replica', prefixOf('replica'))) {
    if (r.value.desired !== 'run' || r.value.retired) continue;
    const a = view.assignments.get(r.value.id);
    if (a && !isReady(view, a.value.node)) out.push(`${r.value.id} is still assigned to ${a.value.node}, which is not ready`);
  }
  return out;
}

/**
 * At quiescence: each service has its desired replicas, each running on a ready node —
 * unless the pure placement function agrees that a pending one fits nowhere.
 */
export async function checkEventuallyRunning(store: Store, agents: ReadonlyMap<string, SimAgent>): Promise<string[]> {
  const out: string[] = [];
  const view = await readClusterView(store);
  const services = await listFacts(store, 'service', prefixOf('service'));
  const records = await listFacts(store, 'replica', prefixOf('replica'));
  const live = (id: string) => records.some((r) => r.value.id === id && r.value.desired === 'run' && !r.value.retired);
  const intents = new Map((await listFacts(store, 'autoscale', prefixOf('autoscale'))).map((f) => [f.value.service, f.value.desired]));
  for (const s of services) {
    const desired = desiredReplicas(s.value, intents.get(s.value.name));
    const mine = records.filter((r) => r.value.service === s.value.name && r.value.desired === 'run' && !r.value.retired);
    const completed = records.filter((r) => r.value.service === s.value.name && ranToCompletion(r.value)).length;
    // Replicas that ran to completion (no-restart policies) count toward the desired number.
    const want = Math.max(0, desired - completed);
    if (mine.length !== want) out.push(`${s.value.name} wants ${desired} replicas (${completed} completed), has ${mine.length} live`);
    for (const r of mine) {
      const a = view.assignments.get(r.value.id);
      if (!a) {
        const spread = spreadCounts(view, live);
        const res = place(demandOf(r.value, s.value), candidatesOf(view), { zone: spread.zone.get(s.value.name) ?? new Map(), node: spread.node.get(s.value.name) ?? new Map() });
        if (res.ok) out.push(`${r.value.id} is pending though ${res.node} fits it`);
        continue;
      }
      const running = agents.get(a.value.node)?.runtime.workloads.get(r.value.id)?.state === 'running';
      if (!running) out.push(`${r.value.id} is assigned to ${a.value.node} but not running there`);
    }
  }
  return out;
}

/** Every decision's chain is complete, or truncated only where a decision was really evicted. */
export async function checkChains(store: Store, evicted: ReadonlySet<string>): Promise<string[]> {
  const out: string[] = [];
  const subjects = new Set<string>();
  for (const kv of (await store.range({ prefix: prefixOf('decision'), keysOnly: true })).kvs) {
    const p = parseKey(kv.key);
    if (p) subjects.add(`${p.params.kind}\0${p.params.subject}`);
  }
  for (const s of subjects) {
    const [kind, subject] = s.split('\0') as ['service' | 'replica' | 'node', string];
    const a = await why(store, kind, subject);
    if (a.complete) continue;
    const missing = a.evicted;
    if (!missing || !evicted.has(missing)) out.push(`why ${kind} ${subject} is truncated without an eviction: ${a.truncated}`);
  }
  return out;
}
