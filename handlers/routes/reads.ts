import { Hono } from 'hono';
import { z } from 'zod';
import { requireReader, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { parseQuery } from '../query.js';
import { nodeViews, replicaViews } from '../status.js';

const replicasQuery = z.strictObject({ service: z.string().min(1).max(63).optional(), all: z.enum(['0', '1']).optional() });

export function readRoutes(deps: ServerDeps) {
  return new Hono<AuthEnv>()
    .get('/v1/replicas', requireReader(deps.auth), async (c) => {
      const q = parseQuery(c, replicasQuery);
      const { revision, replicas } = await replicaViews(deps.store, q.service);
      return c.json({ revision, replicas: q.all === '1' ? replicas : replicas.filter((r) => !r.retired) });
    })
    .get('/v1/nodes', requireReader(deps.auth), async (c) => c.json(await nodeViews(deps.store)));
}
