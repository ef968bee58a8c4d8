import { Hono } from 'hono';
import { CcaError } from '../../core/diagnostics/index.js';
import type { ServerDeps } from '../deps.js';
import { publicRoute } from '../auth.js';
import type { RequestIdEnv } from '../request-id.js';

export function healthRoutes(deps: ServerDeps) {
  return new Hono<RequestIdEnv>()
    .get('/healthz', publicRoute(), (c) => c.json({ ok: true, version: deps.version }))
    .get('/readyz', publicRoute(), async (c) => {
      if (deps.draining?.aborted) throw new CcaError('CCA-E0663', {});
      try {
        const revision = await deps.store.revision();
        deps.metrics.storeRevision.set(revision);
        return c.json({ ok: true, revision });
      } catch (e) {
        const reason = e instanceof CcaError ? e.diagnostic.message : String(e);
        throw new CcaError('CCA-E0610', { reason }, { cause: e });
      }
    })
    .get('/metrics', publicRoute(), async (c) => {
      // The head as of this scrape; a store that does not answer keeps the last one seen.
      await deps.store.revision().then((r) => deps.metrics.storeRevision.set(r), () => undefined);
      c.header('Content-Type', deps.metrics.registry.contentType);
      return c.body(await deps.metrics.registry.metrics());
    });
}
