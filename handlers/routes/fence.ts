import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import type { Fence } from '../../core/model/facts.js';
import { requireRole, type AuthEnv } from '../auth.js';
import { jsonBody } from '../body.js';
import type { ServerDeps } from '../deps.js';
import { readFacts } from '../../jobs/facts.js';

const fenceBody = z.strictObject({ confirm: z.literal(true) });

/**
 * `POST /v1/nodes/{node}/fence`: an operator asserts that a lost node's workloads are
 * stopped (`cca fence node NAME --confirm`). The fence names the newest tenure it covers:
 * the node's last tenure when it is not registered, else the newest past tenure that still
 * has assignments. A ready node with nothing of a past tenure is refused (its agent proves
 * its own stops). The node controller turns the fence into proof for stateful replicas.
 */
export function fenceRoutes(deps: ServerDeps) {
  const { store } = deps;
  const app = new Hono<AuthEnv>();
  app.post('/v1/nodes/:node/fence', requireRole('admin'), async (c) => {
    const node = c.req.param('node');
    const parsed = fenceBody.safeParse(await jsonBody(c));
    if (!parsed.success) throw new CcaError('CCA-E0603', { where: 'the body at confirm', reason: 'a fence must be confirmed with {"confirm": true}' });
    const nodeKey = buildKey('node', node);
    const statusKey = buildKey('nodeStatus', node);
    const [reg, statusKv, assigned] = await Promise.all([store.get(nodeKey), store.get(statusKey), readFacts(store, 'assigned', [node])]);
    const status = statusKv ? decodeFact('nodeStatus', statusKey, statusKv.value) : undefined;
    if (!reg && !status && assigned.facts.length === 0) throw new CcaError('CCA-E0619', { node });
    const current = reg?.createRevision ?? 0;
    const past = assigned.facts.map((a) => a.value.tenure).filter((t) => t !== current);
    let tenure: number;
    if (past.length > 0) tenure = Math.max(...past);
    else if (!reg && status) tenure = status.tenure;
    else throw new CcaError('CCA-E0618', { node, tenure: current });
    const fence: Fence = { node, tenure, assertedBy: 'admin', at: Date.now() };
    // Written only while the node's registration is what we read: a node that re-registered
    // meanwhile may have confirmed the stops itself, and the fence must name a past tenure.
    const r = await store.txn({
      compare: [{ key: nodeKey, target: 'createRevision', op: '=', value: current }],
      success: [{ put: { key: buildKey('fence', node), value: encodeFact('fence', fence) } }],
    });
    if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `the fence of node ${node}` });
    return c.json({ fenced: node, tenure, revision: r.revision });
  });
  return app;
}
