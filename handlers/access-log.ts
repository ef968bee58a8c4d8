import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Diagnostic } from '../core/diagnostics/index.js';
import type { RequestIdEnv } from './request-id.js';

/** What the access log writes to: the pod's pino logger fits it (server/log.ts). */
export interface RequestLog {
  debug(fields: object, msg: string): void;
  info(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

/** Set by handlers/errors.ts when a request ends in a diagnostic, so its line names the code. */
export type FailureEnv = { Variables: { failure?: { diagnostic: Diagnostic; error: unknown } } };

/** Probes and scrapes come every few seconds: at debug, so info stays readable. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One line per request: requestId, method, route (the matched pattern such as
 * `/v1/replicas/:id`, never the raw path: no IDs or query strings), status, durationMs
 * (to the response's head: a watch stream's line is written when it starts), and the
 * diagnostic code of a failed one. Never a header, a body or a token. A bug (5xx from an
 * unexpected error) is logged with its stack here, never sent to the client.
 */
export function accessLog(opts: { log: RequestLog }): MiddlewareHandler<RequestIdEnv & FailureEnv> {
  return async function accessLogMiddleware(c, next) {
    const started = performance.now();
    await next();
    const route = routePath(c) ?? 'unmatched';
    const failure = c.get('failure');
    const fields = {
      requestId: c.get('requestId'),
      method: c.req.method,
      route,
      status: c.res.status,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      ...(failure ? { code: failure.diagnostic.code } : {}),
    };
    if (failure?.diagnostic.blame === 'bug') {
      opts.log.error({ ...fields, err: failure.error }, `${failure.diagnostic.code} ${failure.diagnostic.message}`);
    } else if (PROBES.has(route) && c.res.status < 400) {
      opts.log.debug(fields, 'request');
    } else {
      opts.log.info(fields, 'request');
    }
  };
}
