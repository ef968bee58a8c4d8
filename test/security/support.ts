import { buildKey, encodeFact } from '../../core/keys.js';
import { validateService } from '../../core/model/index.js';
import type { Store } from '../../db/store.js';
import { MemoryStore } from '../../db/memory.js';
import type { ServerDeps } from '../../handlers/deps.js';
import { why } from '../../jobs/decisions/why.js';
import { ADMIN, JOIN, securedApp } from '../handlers/harness.js';

export { ADMIN, JOIN };

export type Err = { code: string; message: string; params: Record<string, unknown> };
export const errorOf = async (r: Response): Promise<Err> => ((await r.json()) as { error: Err }).error;

export const record = (name: string) => ({ name, zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 }, images: { 'busybox:1.35': 'sha256:abc' } });

/** The secured test app (reads closed, known admin and join tokens) with `why` wired, plus agent helpers. */
export async function secured(store: Store = new MemoryStore(), overrides: Partial<ServerDeps> = {}) {
  const ctx = await securedApp(store, { why: (kind, name) => why(store, kind, name), ...overrides });
  const { call } = ctx;
  const enroll = async (node: string, token = JOIN) => {
    const r = await call('POST', '/v1/agent/enroll', { json: { node }, token });
    if (r.status !== 200) throw new Error(`enroll ${node}: ${r.status} ${await r.text()}`);
    return ((await r.json()) as { credential: string }).credential;
  };
  const register = async (node: string, credential: string) => {
    const r = await call('POST', '/v1/agent/nodes/' + node + '/register', { json: { ...record(node), leaseTtlSeconds: 60 }, token: credential });
    if (r.status !== 200) throw new Error(`register ${node}: ${r.status} ${await r.text()}`);
    return (await r.json()) as { lease: number; tenure: number };
  };
  const newToken = async (body: Record<string, unknown>) => {
    const r = await call('POST', '/v1/tokens', { json: body, token: ADMIN });
    if (r.status !== 200) throw new Error(`token: ${r.status} ${await r.text()}`);
    return (await r.json()) as { id: string; token: string; role: string; usesLeft: number | null; expiresAt: number | null };
  };
  return { ...ctx, enroll, register, newToken };
}

/** A valid spec of service `web`, for assignments written straight into a store. */
export const spec = (() => {
  const r = validateService({ name: 'web', image: 'busybox:1.35' });
  if (!r.ok) throw new Error('fixture');
  return r.value;
})();

/** Node `node` runs `replica` of `web` under `tenure`: its assignment and placement, as the scheduler writes them. */
export async function assign(store: Store, node: string, replica: string, tenure: number) {
  await store.txn({
    compare: [],
    success: [
      { put: { key: buildKey('assigned', node, replica), value: encodeFact('assigned', { replica, service: 'web', node, tenure, resources: { cpuMillis: 100, memoryBytes: 1 }, specRevision: 1, spec, placedAt: 0 }) } },
      { put: { key: buildKey('placement', replica), value: encodeFact('placement', { replica, service: 'web', node, tenure, at: 0 }) } },
    ],
  });
}

/** An observation body of `replica` of `web`. */
export const obs = (replica: string, node: string, tenure: number, state = 'running') => ({ replica, service: 'web', node, tenure, state, at: 1 });
