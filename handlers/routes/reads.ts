import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import { requireRole, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { parseQuery } from '../query.js';
import { redactDeep } from '../../core/keys.js';
import { nodeViews, replicaViews } from '../../jobs/views/status.js';

const replicasQuery = z.strictObject({ service: z.string().min(1).max(63).optional(), all: z.enum(['0', '1']).optional() });

export function readRoutes(deps: ServerDeps) {
  return new Hono<AuthEnv>()
    .get('/v1/replicas', requireRole('reader'), async (c) => {
      const q = parseQuery(c, replicasQuery);
      const { revision, replicas } = await replicaViews(deps.store, q.service);
      return c.json({ revision, replicas: q.all === '1' ? replicas : replicas.filter((r) => !r.retired) });
    })
    .get('/v1/nodes', requireRole('reader'), async (c) => c.json(await nodeViews(deps.store)))
    .get('/v1/why/:kind/:name', requireRole('reader'), async (c) => {
      const kind = z.enum(['replica', 'node', 'service']).safeParse(c.req.param('kind'));
      if (!kind.success) throw new CcaError('CCA-E0603', { where: 'the kind in the path', reason: 'must be replica, node or service' });
      if (!deps.why) throw new CcaError('CCA-E0604', { method: 'GET', path: c.req.path });
      return c.json(redactDeep(await deps.why(kind.data, c.req.param('name'))));
    });
}
