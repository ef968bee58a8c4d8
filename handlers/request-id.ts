import { randomBytes } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

const CLIENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * r-<pod start, base36>-<counter>-<random>: sortable within a pod, unique across pods
 * and restarts without coordination.
 */
export function requestIdGenerator(startedAt: number = Date.now()): () => string {
  const start = startedAt.toString(36);
  let n = 0;
  return () => `r-${start}-${(n++).toString(36)}-${randomBytes(4).toString('hex')}`;
}

export type RequestIdEnv = { Variables: { requestId: string } };

/** Use the client's X-Request-Id when it is sane, else make one; echo it on every response. */
export function requestId(opts: { generate: () => string }): MiddlewareHandler<RequestIdEnv> {
  return async function requestIdMiddleware(c, next) {
    const given = c.req.header('x-request-id');
    const id = given && CLIENT_ID.test(given) ? given : opts.generate();
    c.set('requestId', id);
    c.header('X-Request-Id', id);
    await next();
  };
}
