// The cluster map's model: the facts the map draws (replicas, placements, observations, nodes,
// node status, allocations, lost findings), kept per id and updated from watch batches. Each
// batch marks the replicas and nodes it touched; the map then re-derives only those, with
// the API's own pure functions (replicaView, nodeView in jobs/views/status.ts).
import { decodeFact, parseKey } from '/src/core/keys.js';
import { nodeView, replicaView } from '/src/jobs/views/status.js';

const KINDS = new Set(['replica', 'assigned', 'observed', 'node', 'nodeStatus', 'allocation', 'lost']);

export class ClusterModel {
  constructor() {
    this.clear();
  }

  clear() {
    this.revision = 0;
    this.records = new Map(); // replica id → ReplicaRecord
    this.assigned = new Map(); // replica id → Assignment
    this.onNode = new Map(); // node → Set of replica ids assigned there
    this.observed = new Map(); // `${node}/${replica}` → Observation
    this.nodeRecords = new Map(); // node → { value, kv: { createRevision } }
    this.statuses = new Map();
    this.allocations = new Map();
    this.lost = new Set(); // replica ids with a /lost/ finding
    this.replacedBy = new Map(); // replica id → the id of the replica that replaces it
    // Replicas seen lost with their node: kept (after their record is released, which follows
    // the replacement's placement within moments) while that node stays lost, so the map can
    // show where they went. Only what this tab saw happen: a fresh listing has none.
    this.ghosts = new Map(); // replica id → { service, node }
    this.skipped = 0; // values that did not decode (shown nowhere, counted for tests)
    this.dirty = { all: true, replicas: new Set(), nodes: new Set() };
  }

  /** Start over from a listing at one revision. */
  load(revision, kvs) {
    this.clear();
    for (const kv of kvs) this.put(kv);
    this.revision = revision;
  }

  /** One watch batch (one revision); a batch at or below the current revision is skipped. */
  apply(batch) {
    if (batch.revision <= this.revision) return false;
    for (const e of batch.events) {
      if (e.type === 'put') this.put(e.kv);
      else this.remove(e.kv.key);
    }
    this.revision = batch.revision;
    return true;
  }

  /** What changed since the last take(): { all, replicas: Set, nodes: Set }. */
  take() {
    const d = this.dirty;
    this.dirty = { all: false, replicas: new Set(), nodes: new Set() };
    return d;
  }

  put(kv) {
    const p = parseKey(kv.key);
    if (!p || !KINDS.has(p.kind)) return;
    let v;
    try {
      v = decodeFact(p.kind, kv.key, kv.value);
    } catch {
      this.skipped++;
      return;
    }
    this.change(p, v, kv);
  }

  remove(key) {
    const p = parseKey(key);
    if (!p || !KINDS.has(p.kind)) return;
    this.change(p, undefined, undefined);
  }

  change({ kind, params }, v, kv) {
    const d = this.dirty;
    switch (kind) {
      case 'replica': {
        const id = params.replica;
        const old = this.records.get(id);
        if (v) this.records.set(id, v);
        else this.records.delete(id);
        const replaces = (v ?? old)?.replaces?.replica;
        if (replaces) {
          if (v) this.replacedBy.set(replaces, id);
          else if (this.replacedBy.get(replaces) === id) this.replacedBy.delete(replaces);
          d.replicas.add(replaces);
        }
        if (v?.retired && v.ended?.outcome === 'lost' && v.ended.node) this.ghosts.set(id, { service: v.service, node: v.ended.node });
        if (!v && !this.ghosts.has(id)) this.replacedBy.delete(id);
        d.replicas.add(id);
        return;
      }
      case 'assigned': {
        const { node, replica: id } = params;
        if (v) {
          this.assigned.set(id, v);
          this.nodeSet(node).add(id);
        } else {
          if (this.assigned.get(id)?.node === node) this.assigned.delete(id);
          this.onNode.get(node)?.delete(id);
        }
        d.replicas.add(id);
        d.nodes.add(node);
        // A ghost on a lost node says where its replacement went.
        const from = this.records.get(id)?.replaces?.replica;
        if (from) d.replicas.add(from);
        return;
      }
      case 'observed': {
        const key = `${params.node}/${params.replica}`;
        if (v) this.observed.set(key, v);
        else this.observed.delete(key);
        d.replicas.add(params.replica);
        return;
      }
      case 'lost':
        if (v) this.lost.add(params.replica);
        else this.lost.delete(params.replica);
        d.replicas.add(params.replica);
        return;
      case 'node':
        if (v) this.nodeRecords.set(params.node, { value: v, kv: { createRevision: kv.createRevision } });
        else this.nodeRecords.delete(params.node);
        d.nodes.add(params.node);
        // A new tenure changes what the node's stateful replicas wait for (replicaView).
        for (const id of this.onNode.get(params.node) ?? []) d.replicas.add(id);
        return;
      case 'nodeStatus':
        this.mapSet(this.statuses, params.node, v);
        d.nodes.add(params.node);
        if (v?.state !== 'lost') this.dropGhosts(params.node);
        return;
      case 'allocation':
        this.mapSet(this.allocations, params.node, v);
        d.nodes.add(params.node);
        return;
    }
  }

  /** The node is back (or gone): its ghosts are history. */
  dropGhosts(node) {
    for (const [id, g] of this.ghosts) {
      if (g.node !== node) continue;
      this.ghosts.delete(id);
      if (!this.records.has(id)) this.replacedBy.delete(id);
      this.dirty.replicas.add(id);
    }
  }

  mapSet(map, k, v) {
    if (v) map.set(k, v);
    else map.delete(k);
  }

  nodeSet(node) {
    let s = this.onNode.get(node);
    if (!s) this.onNode.set(node, (s = new Set()));
    return s;
  }

  nodeNames() {
    return new Set([...this.nodeRecords.keys(), ...this.statuses.keys()]);
  }

  /** A node's view (as `GET /v1/nodes`), or undefined once neither its record nor its status exists. */
  node(name) {
    const r = this.nodeRecords.get(name);
    const s = this.statuses.get(name);
    if (!r && !s) return undefined;
    return nodeView(name, r, s, this.allocations.get(name));
  }

  /**
   * A replica's view (as `GET /v1/replicas`) and where the map draws it: `at` = 'node' (on
   * `view.node`), 'tray' (wants to run, not placed), 'ghost' (lost with `ghostOf`, drawn
   * there greyed, with `movedTo`: the node its replacement is placed on), or undefined.
   */
  replica(id) {
    const r = this.records.get(id);
    if (!r) {
      const g = this.ghosts.get(id);
      if (!g) return undefined;
      const next = this.replacedBy.get(id);
      return { view: { id, service: g.service, state: 'lost', restarts: 0 }, replacedBy: next, movedTo: next ? this.assigned.get(next)?.node : undefined, at: 'ghost', ghostOf: g.node };
    }
    const a = this.assigned.get(id);
    const view = replicaView(r, a, a ? this.observed.get(`${a.node}/${id}`) : undefined, {
      nodeTenure: a ? this.nodeRecords.get(a.node)?.kv.createRevision : undefined,
      declaredLost: this.lost.has(id),
    });
    const next = this.replacedBy.get(id);
    const out = { view, replaces: r.replaces?.replica, replacedBy: next, movedTo: next ? this.assigned.get(next)?.node : undefined };
    if (r.retired) {
      if (r.ended?.outcome === 'lost' && r.ended.node) return { ...out, at: 'ghost', ghostOf: r.ended.node };
      return undefined;
    }
    if (view.node) return { ...out, at: 'node' };
    if (r.desired === 'run') return { ...out, at: 'tray' };
    return undefined;
  }
}
