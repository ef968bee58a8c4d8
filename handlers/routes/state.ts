import { Hono } from 'hono';
import { z } from 'zod';
import { prefixEnd } from '../../db/keyspace.js';
import type { ServerDeps } from '../deps.js';
import { parseQuery, revisionParam } from '../query.js';
import { redactStoredValue } from '../../core/keys.js';
import { requireRole, type AuthEnv } from '../auth.js';

const stateQuery = z.strictObject({
  prefix: z.string().default(''),
  revision: revisionParam.default(0),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000),
  /** The last key of the previous page; pass the first page's revision too for a consistent listing. */
  after: z.string().min(1).optional(),
});

/** Raw facts by prefix at a revision, paged: the store as the API's lowest level. */
export function stateRoutes(deps: ServerDeps) {
  return new Hono<AuthEnv>().get('/v1/state', requireRole('reader'), async (c) => {
    const q = parseQuery(c, stateQuery);
    const end = prefixEnd(q.prefix);
    // Keys never hold NUL, so after + U+0001 is the first key that can follow `after`.
    const where = q.after !== undefined ? { start: `${q.after}\u0001`, ...(end !== undefined ? { end } : {}) } : { prefix: q.prefix };
    const r = await deps.store.range({ ...where, revision: q.revision, limit: q.limit });
    return c.json({ revision: r.revision, count: r.count, more: r.more, kvs: r.kvs.map((kv) => ({ ...kv, value: redactStoredValue(kv.key, kv.value) })) });
  });
}
