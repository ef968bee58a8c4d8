import { Hono } from 'hono';
import { CcaError } from '../../core/diagnostics/index.js';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import type { Decision, NodeOp } from '../../core/model/facts.js';
import { nodeRecordSchema } from '../../core/model/index.js';
import type { Compare, KeyValue, Op, Store } from '../../db/store.js';
import { principalName, requireRole, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { readFacts } from '../../jobs/facts.js';
import { absentEvidence, evidenceOf } from '../../jobs/decisions/record.js';

/**
 * Node operations (admin; `cca node cordon|uncordon|drain|remove NAME`, `cca repair node
 * NAME`). Each writes an operator's intent — `/nodeops/<node>` or `/repair/<node>`, keys
 * the API owns — with a node decision (`cca why node NAME`) in one transaction that
 * compares everything the request read. The controllers act on the intent: the scheduler
 * places nothing on a cordoned or draining node and carries out repairs, the replica
 * controller replaces a draining node's replicas within each service's update limits, the
 * node controller forgets a removed node.
 */
export type NodeAction = 'cordon' | 'uncordon' | 'drain' | 'remove' | 'repair';

/** Milliseconds padded so that decision ids sort by time (as the controllers' `timeTag`). */
const timeTag = (at: number) => String(Math.max(0, Math.floor(at))).padStart(13, '0');

interface Read {
  node: string;
  reg: KeyValue | null;
  status: KeyValue | null;
  op: KeyValue | null;
  audit: KeyValue | null;
  tenures: number[];
}

const versionOf = (key: string, kv: KeyValue | null): Compare => ({ key, target: 'modRevision', op: '=', value: kv?.modRevision ?? 0 });
/** What the request read, embedded or cited by hash by the decisions' one rule (jobs/decisions/record.ts). */
const evidence = (key: string, kv: KeyValue | null) => (kv ? evidenceOf({ key, kv }) : absentEvidence(key));

async function readNode(store: Store, node: string): Promise<Read> {
  const [reg, status, op, audit, assigned] = await Promise.all([
    store.get(buildKey('node', node)),
    store.get(buildKey('nodeStatus', node)),
    store.get(buildKey('nodeOp', node)),
    store.get(buildKey('audit', node)),
    readFacts(store, 'assigned', [node]),
  ]);
  if (!reg && !status && assigned.facts.length === 0) throw new CcaError('CCA-E0619', { node });
  return { node, reg, status, op, audit, tenures: assigned.facts.map((a) => a.value.tenure) };
}

interface Plan {
  write: Op;
  compares: Compare[];
  action: string;
  reasons: string[];
  answer: Record<string, unknown>;
}

function planOp(r: Read, action: Exclude<NodeAction, 'repair'>, by: string, now: number): Plan {
  const { node } = r;
  const prev: NodeOp | undefined = r.op ? decodeFact('nodeOp', buildKey('nodeOp', node), r.op.value) : undefined;
  const base = { node, requestedBy: by, at: now, removeTenure: prev?.removeTenure ?? 0 };
  let next: NodeOp;
  let reasons: string[];
  const compares: Compare[] = [versionOf(buildKey('nodeOp', node), r.op)];
  if (action === 'cordon') {
    next = { ...base, cordoned: true, drain: prev?.drain ?? false };
    reasons = [`${by} cordoned node ${node}: it takes no new placements; what runs there stays`];
  } else if (action === 'uncordon') {
    next = { ...base, cordoned: false, drain: false };
    reasons = [`${by} uncordoned node ${node}: it takes new placements again${prev?.drain ? ' (and its drain stops)' : ''}`];
  } else if (action === 'drain') {
    next = { ...base, cordoned: true, drain: true };
    reasons = [`${by} drains node ${node}: no new placements, and its replicas are replaced elsewhere first, within each service's update limits`];
  } else {
    if (r.reg) throw new CcaError('CCA-E0680', { node, tenure: r.reg.createRevision });
    const status = r.status ? decodeFact('nodeStatus', buildKey('nodeStatus', node), r.status.value) : undefined;
    const tenure = Math.max(status?.tenure ?? 0, ...r.tenures);
    next = { ...base, cordoned: true, drain: false, removeTenure: tenure };
    // Only while it is still not registered: a node that returned is not lost.
    compares.push({ key: buildKey('node', node), target: 'createRevision', op: '=', value: 0 }, versionOf(buildKey('nodeStatus', node), r.status));
    reasons = [`${by} removed node ${node} (not registered; last tenure ${tenure}): its replicas are replaced at once and its records forgotten`];
  }
  return { write: { put: { key: buildKey('nodeOp', node), value: encodeFact('nodeOp', next) } }, compares, action: `${action} node ${node}`, reasons, answer: { ...next } };
}

function planRepair(r: Read, by: string, now: number): Plan {
  const { node } = r;
  const auditKey = buildKey('audit', node);
  const audit = r.audit ? decodeFact('audit', auditKey, r.audit.value) : undefined;
  if (!audit?.open) throw new CcaError('CCA-E0681', { node });
  const repair = { node, requestedBy: by, at: now, finding: audit.revision };
  return {
    write: { put: { key: buildKey('repair', node), value: encodeFact('repair', repair) } },
    compares: [versionOf(auditKey, r.audit)],
    action: `asked the scheduler to repair node ${node}`,
    reasons: [`${by} asked for the allocation of node ${node} to be rebuilt from its assignments (the finding at revision ${audit.revision})`],
    answer: repair,
  };
}

async function commit(store: Store, r: Read, plan: Plan, tag: string, now: number) {
  const id = `${timeTag(now)}-api-${tag}`;
  const decisionKey = buildKey('decision', 'node', r.node, id);
  const cited = tag === 'repair' ? buildKey('audit', r.node) : buildKey('nodeOp', r.node);
  const decision: Decision = {
    id,
    kind: 'node',
    subject: r.node,
    controller: 'api',
    action: plan.action,
    at: now,
    evidence: [evidence(buildKey('node', r.node), r.reg), evidence(buildKey('nodeStatus', r.node), r.status), evidence(cited, tag === 'repair' ? r.audit : r.op)],
    cause: { fact: cited, modRevision: (tag === 'repair' ? r.audit : r.op)?.modRevision ?? 0 },
    reasons: plan.reasons,
  };
  const res = await store.txn({
    compare: [...plan.compares, { key: decisionKey, target: 'createRevision', op: '=', value: 0 }],
    success: [plan.write, { put: { key: decisionKey, value: encodeFact('decision', decision) } }],
  });
  if (!res.succeeded) throw new CcaError('CCA-E0611', { what: `node ${r.node}` });
  return { ...plan.answer, revision: res.revision, decision: decisionKey };
}

/** Carry out one node action for an admin request; the answer names the decision written. */
export async function nodeAction(store: Store, node: string, action: NodeAction, by: string, now = Date.now()) {
  if (!nodeRecordSchema.shape.name.safeParse(node).success) throw new CcaError('CCA-E0619', { node });
  const r = await readNode(store, node);
  const plan = action === 'repair' ? planRepair(r, by, now) : planOp(r, action, by, now);
  return commit(store, r, plan, action, now);
}

export function nodeOpRoutes(deps: ServerDeps) {
  const app = new Hono<AuthEnv>();
  for (const action of ['cordon', 'uncordon', 'drain', 'remove', 'repair'] as const) {
    app.post(`/v1/nodes/:node/${action}`, requireRole('admin'), async (c) => c.json(await nodeAction(deps.store, c.req.param('node'), action, principalName(c.get('principal')))));
  }
  return app;
}
