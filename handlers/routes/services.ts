import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import { buildKey, decodeFact, redactFact } from '../../core/keys.js';
import { dnsLabelProblem } from '../../core/model/index.js';
import { applyServices, deleteService, type ApplyInput } from '../apply.js';
import { requireRole, type AuthEnv } from '../auth.js';
import { jsonBody } from '../body.js';
import type { ServerDeps } from '../deps.js';
import { parseQuery } from '../query.js';
import { serviceStatuses } from '../../jobs/views/status.js';

const applyQuery = z.strictObject({
  dry_run: z.enum(['0', '1', 'true', 'false']).optional(),
  prune: z.enum(['0', '1', 'true', 'false']).optional(),
});
const yes = (v: string | undefined) => v === '1' || v === 'true';

const applyJson = z.union([
  z.strictObject({ services: z.array(z.unknown()).max(1000), prune: z.boolean().default(false) }),
  z.strictObject({
    files: z.array(z.strictObject({ name: z.string().min(1).max(255), text: z.string() })).min(1).max(100),
    prune: z.boolean().default(false),
  }),
]);

/** The API's writes of desired state, and its reads of services with their status. */
export function serviceRoutes(deps: ServerDeps) {
  const app = new Hono<AuthEnv>();
  app.post('/v1/apply', requireRole('deployer'), async (c) => {
    const q = parseQuery(c, applyQuery);
    const type = c.req.header('content-type') ?? '';
    let input: ApplyInput;
    if (/^(text\/plain|text\/x-cca|application\/x-cca)\b/i.test(type)) {
      const name = c.req.header('x-cca-filename') ?? 'request.cca';
      input = { kind: 'files', files: [{ name, text: await c.req.text() }], prune: yes(q.prune) };
    } else {
      const parsed = applyJson.safeParse(await jsonBody(c));
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new CcaError('CCA-E0603', { where: `the body${issue.path.length ? ` at ${issue.path.join('.')}` : ''}`, reason: issue.message });
      }
      const b = parsed.data;
      input = 'services' in b ? { kind: 'specs', services: b.services, prune: b.prune || yes(q.prune) } : { kind: 'files', files: b.files, prune: b.prune || yes(q.prune) };
    }
    return c.json(await applyServices(deps.store, input, yes(q.dry_run), deps.secrets));
  });

  app.delete('/v1/services/:name', requireRole('deployer'), async (c) => {
    const name = serviceName(c.req.param('name'));
    return c.json({ deleted: name, revision: await deleteService(deps.store, name) });
  });

  app.get('/v1/services', requireRole('reader'), async (c) => {
    const { revision, services } = await serviceStatuses(deps.store);
    return c.json({ revision, services: services.map((s) => ({ ...s, spec: redactFact('service', s.spec) })) });
  });

  app.get('/v1/services/:name', requireRole('reader'), async (c) => {
    const name = serviceName(c.req.param('name'));
    const { revision, services } = await serviceStatuses(deps.store, name);
    const s = services[0];
    if (!s) throw new CcaError('CCA-E0609', { kind: 'service', name });
    return c.json({ revision, service: { ...s, spec: redactFact('service', s.spec) } });
  });

  /**
   * The service's published endpoints, for a load balancer: read at one revision with the
   * spec. `revision` lets a client follow on with `/v1/watch?prefix=/endpoints/<name>&from=revision+1`.
   */
  app.get('/v1/services/:name/endpoints', requireRole('reader'), async (c) => {
    const name = serviceName(c.req.param('name'));
    const revision = await deps.store.revision();
    const [spec, kv] = await Promise.all([deps.store.get(buildKey('service', name), { revision }), deps.store.get(buildKey('endpoints', name), { revision })]);
    if (!spec) throw new CcaError('CCA-E0609', { kind: 'service', name });
    const value = kv ? decodeFact('endpoints', kv.key, kv.value) : undefined;
    return c.json({
      revision,
      service: name,
      endpoints: value?.endpoints ?? [],
      /** Every ready replica: more than are listed when the set passes its byte bound (docs/endpoints.md). */
      ready: value ? (value.ready ?? value.endpoints.length) : 0,
      modRevision: kv?.modRevision ?? 0,
      at: value?.at ?? null,
    });
  });
  return app;
}

/** A name that could never be a service is simply not found. */
function serviceName(name: string): string {
  if (dnsLabelProblem(name, 63)) throw new CcaError('CCA-E0609', { kind: 'service', name });
  return name;
}

