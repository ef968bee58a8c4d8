// The timeline's history: what the cluster decided and what its agents saw, as entries in
// commit order, built from the store's watch batches (the live watch or the simulation's
// store). Decisions are the controllers' records (`/decisions/`); observed entries are an
// agent's report of a replica changing state (`/observed/`) and its node events (`/events/`).
// Bounded: the newest MAX entries are kept for the session.
import { decodeFact, parseKey } from '/src/core/keys.js';
import { serviceOfReplica } from '/src/jobs/ids.js';

export const MAX_ENTRIES = 2_000;

const uniq = (xs) => [...new Set(xs.filter(Boolean))];

/** Which services, nodes and replicas a decision concerns: its subject, its cause's subject and the keys it read. */
function concerns(d) {
  const services = [];
  const nodes = [];
  const replicas = [];
  if (d.kind === 'service') services.push(d.subject);
  if (d.kind === 'node') nodes.push(d.subject);
  if (d.kind === 'replica') {
    replicas.push(d.subject);
    services.push(serviceOfReplica(d.subject));
  }
  // A replacement's creation is caused by the old replica's loss: it concerns that replica too.
  const cause = d.cause && parseKey('decision' in d.cause ? d.cause.decision : d.cause.fact);
  if (cause?.kind === 'decision') ({ service: services, node: nodes, replica: replicas })[cause.params.kind]?.push(cause.params.subject);
  for (const e of [...d.evidence, ...(cause && cause.kind !== 'decision' ? [{ key: 'decision' in d.cause ? '' : d.cause.fact }] : [])]) {
    const p = parseKey(e.key)?.params;
    if (!p) continue;
    if (p.node) nodes.push(p.node);
    // Only a replica decision's own evidence names "its" service; a service decision cites many replicas.
    if (p.replica && d.kind !== 'service') replicas.push(p.replica);
  }
  return { services: uniq(services), nodes: uniq(nodes), replicas: uniq(replicas) };
}

export class TimelineLog {
  constructor(max = MAX_ENTRIES) {
    this.max = max;
    /** Oldest first (commit order). */
    this.entries = [];
    this.seen = new Set();
    /** The last state reported per `/observed/` key, so only changes become entries. */
    this.states = new Map();
    this.version = 0;
  }

  clear() {
    this.entries = [];
    this.seen.clear();
    this.states.clear();
    this.version++;
  }

  /** One watch batch (or a listing, which only primes the states). Returns whether entries were added. */
  ingest(batch) {
    if (batch.reset) {
      this.clear();
      return true;
    }
    let added = false;
    if (batch.listing) this.states.clear(); // the whole picture again (after a compaction, say)
    for (const ev of batch.events) {
      const p = parseKey(ev.kv.key);
      if (!p) continue;
      if (ev.type === 'delete') {
        if (p.kind === 'observed') this.states.delete(ev.kv.key);
        continue;
      }
      const e = batch.listing ? this.prime(p, ev.kv) : this.entryOf(p, ev.kv);
      if (e) added = this.add(e) || added;
    }
    if (added) this.version++;
    return added;
  }

  /** A subject's retained decisions, listed at once (`kvs` of `/decisions/<kind>/<subject>/`). */
  backfill(kvs) {
    let added = false;
    for (const kv of kvs) {
      const p = parseKey(kv.key);
      if (p?.kind === 'decision') added = this.add(this.decisionEntry(kv)) || added;
    }
    if (added) {
      this.entries.sort((a, b) => a.revision - b.revision || (a.id < b.id ? -1 : 1));
      this.version++;
    }
    return added;
  }

  add(e) {
    if (this.seen.has(e.id)) return false;
    this.seen.add(e.id);
    this.entries.push(e);
    if (this.entries.length > this.max) {
      for (const old of this.entries.splice(0, this.entries.length - this.max)) this.seen.delete(old.id);
    }
    return true;
  }

  prime(p, kv) {
    if (p.kind === 'observed') this.states.set(kv.key, decodeFact('observed', kv.key, kv.value).state);
    return undefined;
  }

  entryOf(p, kv) {
    if (p.kind === 'decision' && kv.version === 1) return this.decisionEntry(kv);
    if (p.kind === 'event') {
      const e = decodeFact('event', kv.key, kv.value);
      return {
        kind: e.replica ? 'replica' : 'node', subject: e.replica ?? e.node, id: kv.key, revision: kv.modRevision, at: e.at, type: 'event', action: e.kind, reason: e.message, state: '',
        services: uniq([e.replica && serviceOfReplica(e.replica)]), nodes: [e.node], replicas: uniq([e.replica]),
        why: e.replica ? { kind: 'replica', name: e.replica } : { kind: 'node', name: e.node },
      };
    }
    if (p.kind === 'observed') {
      const o = decodeFact('observed', kv.key, kv.value);
      const was = this.states.get(kv.key);
      this.states.set(kv.key, o.state);
      if (was === o.state) return undefined;
      const detail = o.diagnostic ? `${o.diagnostic.code} ${o.diagnostic.message}` : o.exitCode !== undefined ? `exit code ${o.exitCode}` : was ? `was ${was}` : '';
      return {
        id: `${kv.key}@${kv.modRevision}`, revision: kv.modRevision, at: o.at, type: 'observed', action: `${o.state} on ${o.node}`, reason: detail, state: o.state,
        kind: 'replica', subject: o.replica, services: [o.service], nodes: [o.node], replicas: [o.replica], controller: `agent ${o.node}`,
        why: { kind: 'replica', name: o.replica },
      };
    }
    return undefined;
  }

  decisionEntry(kv) {
    const d = decodeFact('decision', kv.key, kv.value);
    return {
      id: kv.key, revision: kv.modRevision, at: d.at, type: 'decision', kind: d.kind, subject: d.subject, controller: d.controller,
      action: d.action, reason: d.reasons[0] ?? '', state: '', ...concerns(d), why: { kind: d.kind, name: d.subject },
    };
  }
}
