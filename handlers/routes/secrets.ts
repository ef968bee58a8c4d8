import { Hono } from 'hono';
import { CcaError } from '../../core/diagnostics/index.js';
import { buildKey, encodeFact } from '../../core/keys.js';
import { parseSealed } from '../../core/model/index.js';
import { requireRole, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { readFacts } from '../../jobs/facts.js';

/**
 * `POST /v1/secrets/rotate` (`cca secrets rotate`): re-seal every stored service's secrets
 * under the current key, keeping each value's id (so no replica's template changes and
 * nothing rolls). Assignments keep what they were placed with until they are replaced (the
 * scheduler is their only writer): the answer counts, per old key, the values that still
 * use it, so the operator knows when that key can leave the keyring.
 */
export function secretRoutes(deps: ServerDeps) {
  const { store } = deps;
  const app = new Hono<AuthEnv>();
  app.post('/v1/secrets/rotate', requireRole('admin'), async (c) => {
    const box = deps.secrets;
    if (!box) throw new CcaError('CCA-E0661', { reason: 'this server has no secret key to rotate to (set CCA_SECRET_KEY or --secret-key-file)' });
    const { facts } = await readFacts(store, 'service');
    let resealed = 0;
    let revision = await store.revision();
    for (const f of facts) {
      const spec = f.value;
      if (!spec.secrets.some((s) => parseSealed(s.value)?.keyId !== box.currentKeyId)) continue;
      const next = { ...spec, secrets: spec.secrets.map((s) => ({ ...s, value: box.reseal(s.value) })) };
      const key = buildKey('service', spec.name);
      // One service per txn, compared on what was read: an apply in between wins, and a rerun finishes.
      const r = await store.txn({ compare: [{ key, target: 'modRevision', op: '=', value: f.kv.modRevision }], success: [{ put: { key, value: encodeFact('service', next) } }] });
      if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `service ${spec.name} (run the rotation again)` });
      resealed++;
      revision = r.revision;
    }
    const stillUsing: Record<string, number> = {};
    const { facts: assigned } = await readFacts(store, 'assigned');
    for (const a of assigned) {
      for (const s of a.value.spec.secrets) {
        const id = parseSealed(s.value)?.keyId ?? '(plain)';
        if (id !== box.currentKeyId) stillUsing[id] = (stillUsing[id] ?? 0) + 1;
      }
    }
    return c.json({ keyId: box.currentKeyId, resealed, revision, stillUsing });
  });
  return app;
}
