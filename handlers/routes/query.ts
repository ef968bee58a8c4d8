import { Hono, type Context } from 'hono';
import type { ServerDeps } from '../deps.js';
import { jsonBody, parseBody } from '../body.js';
import { factQuerySchema, runFactQuery } from '../fact-query.js';
import { requireRole, type AuthEnv } from '../auth.js';

/**
 * Fact queries: `QUERY /v1/state` (the HTTP QUERY method: a safe read with a body), and
 * `POST /v1/state/query` for clients and proxies that cannot send it. Same body, same answer.
 */
export function queryRoutes(deps: ServerDeps) {
  const answer = async (c: Context<AuthEnv>) => {
    const q = parseBody(factQuerySchema, await jsonBody(c));
    return c.json(await runFactQuery(deps.store, q, deps.limits.queryScanKeys));
  };
  return new Hono<AuthEnv>().on('QUERY', '/v1/state', requireRole('reader'), answer).post('/v1/state/query', requireRole('reader'), answer);
}
