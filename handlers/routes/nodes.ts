import { Hono } from 'hono';
import { nodeRecordSchema } from '../../core/model/index.js';
import { CcaError } from '../../core/diagnostics/index.js';
import { requireRole, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { resetCredential } from '../identity.js';

/**
 * `POST /v1/nodes/{node}/reset` (admin; `cca node reset NAME`): delete the node's
 * credential, with a decision record, so the join token may enroll the name again.
 */
/** A reset takes no body: the node in the path is all it needs. */
export function nodeRoutes(deps: ServerDeps) {
  return new Hono<AuthEnv>().post('/v1/nodes/:node/reset', requireRole('admin'), async (c) => {
    const node = c.req.param('node');
    const name = nodeRecordSchema.shape.name.safeParse(node);
    if (!name.success) throw new CcaError('CCA-E0635', { node, action: 'reset' });
    const p = c.get('principal');
    const by = p.kind === 'token' ? `admin token ${p.id}` : 'an admin';
    const r = await resetCredential(deps.store, node, by);
    return c.json({ reset: node, revision: r.revision, decision: r.decision });
  });
}
