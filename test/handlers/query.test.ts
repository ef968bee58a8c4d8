import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { MemoryStore } from '../../db/memory.js';
import { defaultLimits } from '../../handlers/deps.js';
import { ADMIN, JOIN, errorOf, secured } from '../security/support.js';

type Item = { key: string; modRevision: number; fact: Record<string, unknown> };
type Answer = { kind: string; revision: number; items: Item[]; more: boolean; after?: string; scanned: number };

const replica = (service: string, id: string, desired: 'run' | 'stop' = 'run', specRevision = 1) =>
  encodeFact('replica', { id, service, specRevision, desired, createdAt: 1 });

/** Replicas of two services, written one per revision. */
async function seeded(store = new MemoryStore(), overrides = {}) {
  for (const [s, id, d] of [['api', 'api-1', 'run'], ['web', 'web-1', 'run'], ['web', 'web-2', 'stop'], ['web', 'web-3', 'run'], ['web', 'web-4', 'stop'], ['web', 'web-5', 'run']] as const) {
    await store.put(buildKey('replica', s, id), replica(s, id, d));
  }
  return secured(store, overrides);
}

describe('QUERY /v1/state', () => {
  test('predicates and select on decoded facts; QUERY and the POST alias answer the same; reader role', async () => {
    const { call, newToken } = await seeded();
    const { token: reader } = await newToken({ role: 'reader' });
    const body = { prefix: '/replicas/', where: [['service', '=', 'web'], ['desired', '!=', 'stop']], select: ['id', 'desired'] };
    const viaQuery = await call('QUERY', '/v1/state', { json: body, token: reader });
    expect(viaQuery.status).toBe(200);
    const q = (await viaQuery.json()) as Answer;
    expect(q).toMatchObject({ kind: 'replica', more: false });
    expect(q.items.map((i) => i.fact)).toEqual([{ id: 'web-1', desired: 'run' }, { id: 'web-3', desired: 'run' }, { id: 'web-5', desired: 'run' }]);
    expect(q.items[0]!.key).toBe('/replicas/web/web-1');
    const viaPost = (await (await call('POST', '/v1/state/query', { json: body, token: reader })).json()) as Answer;
    expect(viaPost).toEqual(q);
    // No token: the reader role is needed, as for GET /v1/state.
    expect((await errorOf(await call('QUERY', '/v1/state', { json: body }))).code).toBe('CCA-E0605');
    // A join token enrolls nodes and reads nothing.
    expect((await errorOf(await call('POST', '/v1/state/query', { json: body, token: JOIN }))).code).toBe('CCA-E0636');
    // Without select, the whole fact with its key's segments.
    const whole = (await (await call('QUERY', '/v1/state', { json: { prefix: '/replicas/api/' }, token: reader })).json()) as Answer;
    expect(whole.items[0]!.fact).toMatchObject({ id: 'api-1', service: 'api', replica: 'api-1', desired: 'run', retired: false });
  });

  test('every page answers at the first page\'s revision: a write between pages is not seen', async () => {
    const { call, store } = await seeded();
    const body = { prefix: '/replicas/web/', where: [['desired', 'in', ['run', 'stop']]], select: ['id', 'desired'], limit: 2 };
    const first = (await (await call('QUERY', '/v1/state', { json: body, token: ADMIN })).json()) as Answer;
    expect(first.items.map((i) => i.fact.id)).toEqual(['web-1', 'web-2']);
    expect(first).toMatchObject({ more: true, after: '/replicas/web/web-2' });
    // Between pages: one replica on the next page changes, one is added, one is deleted.
    await store.put(buildKey('replica', 'web', 'web-3'), replica('web', 'web-3', 'stop'));
    await store.put(buildKey('replica', 'web', 'web-6'), replica('web', 'web-6'));
    await store.delete(buildKey('replica', 'web', 'web-4'));
    const second = (await (await call('QUERY', '/v1/state', { json: { ...body, revision: first.revision, after: first.after }, token: ADMIN })).json()) as Answer;
    expect(second.revision).toBe(first.revision);
    expect(second.items.map((i) => i.fact)).toEqual([{ id: 'web-3', desired: 'run' }, { id: 'web-4', desired: 'stop' }]);
    const third = (await (await call('POST', '/v1/state/query', { json: { ...body, revision: first.revision, after: second.after }, token: ADMIN })).json()) as Answer;
    expect(third.items.map((i) => i.fact.id)).toEqual(['web-5']);
    expect(third.more).toBe(false);
    // A fresh query (revision 0) sees the writes.
    const now = (await (await call('QUERY', '/v1/state', { json: { ...body, limit: 100 }, token: ADMIN })).json()) as Answer;
    expect(now.revision).toBeGreaterThan(first.revision);
    expect(now.items.map((i) => `${i.fact.id}:${i.fact.desired}`)).toEqual(['web-1:run', 'web-2:stop', 'web-3:stop', 'web-5:run', 'web-6:run']);
  });

  test('pages fill with matches past keys that do not match, across scan chunks', async () => {
    const store = new MemoryStore();
    for (let i = 0; i < 1200; i++) await store.put(buildKey('replica', 'web', `r${String(i).padStart(4, '0')}`), replica('web', `r${i}`, i % 400 === 399 ? 'stop' : 'run'));
    const { call } = await secured(store);
    const r = (await (await call('QUERY', '/v1/state', { json: { prefix: '/replicas/', where: [['desired', '=', 'stop']], select: ['id'], limit: 2 }, token: ADMIN })).json()) as Answer;
    expect(r.items.map((i) => i.fact.id)).toEqual(['r399', 'r799']);
    expect(r).toMatchObject({ more: true, after: '/replicas/web/r0799', scanned: 800 });
    const rest = (await (await call('QUERY', '/v1/state', { json: { prefix: '/replicas/', where: [['desired', '=', 'stop']], select: ['id'], limit: 2, after: r.after, revision: r.revision }, token: ADMIN })).json()) as Answer;
    expect(rest).toMatchObject({ more: false, scanned: 400 });
    expect(rest.items.map((i) => i.fact.id)).toEqual(['r1199']);
  });

  test('a prefix holding more keys than the bound is refused with a code suggesting a narrower prefix', async () => {
    const { call } = await seeded(new MemoryStore(), { limits: { ...defaultLimits, queryScanKeys: 5 } });
    const r = await call('QUERY', '/v1/state', { json: { prefix: '/replicas/', where: [['desired', '=', 'run']] }, token: ADMIN });
    expect(r.status).toBe(400);
    const e = await errorOf(r);
    expect(e.code).toBe('CCA-E0691');
    expect(e.message).toContain('the prefix /replicas/ holds 6 keys');
    expect((e as unknown as { fix: string }).fix).toContain('/replicas/<service>/');
    const narrower = (await (await call('QUERY', '/v1/state', { json: { prefix: '/replicas/web/', where: [['desired', '=', 'run']] }, token: ADMIN })).json()) as Answer;
    expect(narrower.items.length).toBe(3);
    expect(defaultLimits.queryScanKeys).toBe(10_000);
  });

  test('secrets are redacted for everyone, and a predicate cannot probe a secret\'s value', async () => {
    const { call, newToken } = await secured();
    const spec = { name: 'api', image: 'busybox:1.35', secrets: [{ name: 'token', value: 's3cr3t-one', env: 'TOKEN' }] };
    expect((await call('POST', '/v1/apply', { json: { services: [spec] }, token: ADMIN })).status).toBe(200);
    const { token: reader } = await newToken({ role: 'reader' });
    for (const token of [ADMIN, reader]) {
      const all = await (await call('QUERY', '/v1/state', { json: { prefix: '/services/' }, token })).text();
      expect(all).not.toContain('s3cr3t');
      expect(all).not.toContain('cca:sealed');
      expect((JSON.parse(all) as Answer).items[0]!.fact).toMatchObject({ name: 'api', secrets: [{ name: 'token', value: '(redacted)' }] });
      for (const where of [[['secrets.0.value', '=', 's3cr3t-one']], [['secrets.0.value', 'prefix', 's3']], [['secrets.0.value', 'prefix', 'cca:sealed']]]) {
        const probe = (await (await call('QUERY', '/v1/state', { json: { prefix: '/services/', where }, token })).json()) as Answer;
        expect(probe.items, JSON.stringify(where)).toEqual([]);
      }
      const selected = await (await call('QUERY', '/v1/state', { json: { prefix: '/services/', select: ['secrets.0.value'] }, token })).text();
      expect(selected).not.toContain('s3cr3t');
    }
  });

  test('located predicate errors: every problem, which predicate and which part', async () => {
    const { call } = await seeded();
    const r = await call('QUERY', '/v1/state', {
      json: { prefix: '/replicas/', where: [['service', '=', 'web'], ['desird', '=', 'run'], ['specRevision', '<', 'x'], ['service', 'like', 'w'], ['service', 'in', 'web']], select: ['id', 'nod'] },
      token: ADMIN,
    });
    expect(r.status).toBe(400);
    const body = (await r.json()) as { error: { code: string; message: string }; diagnostics: { code: string; message: string }[] };
    expect(body.error.code).toBe('CCA-E0693');
    expect(body.error.message).toContain('5 problem(s)');
    expect(body.diagnostics.map((d) => d.message)).toEqual([
      'where[1] ["desird","=","run"]: replica (/replicas/) facts have no field desird',
      'where[2] ["specRevision","<","x"]: the value of <: < compares numbers, got "x"',
      'where[3] ["service","like","w"]: the operator like is not one a query knows',
      'where[4] ["service","in","web"]: the value of in: in needs a list, got "web"',
      'select[1] "nod": replica (/replicas/) facts have no field nod',
    ]);
    expect(body.diagnostics.map((d) => d.code)).toEqual(['CCA-E0011', 'CCA-E0012', 'CCA-E0010', 'CCA-E0012', 'CCA-E0011']);
  });

  test('other refusals are coded: unknown prefix, cursor outside the prefix, bad body, compacted, no JSON', async () => {
    const { call, store } = await seeded();
    const codeOf = async (json: unknown) => (await errorOf(await call('QUERY', '/v1/state', { json, token: ADMIN }))).code;
    expect(await codeOf({ prefix: '/auth/' })).toBe('CCA-E0690');
    expect(await codeOf({ prefix: '/' })).toBe('CCA-E0690');
    expect(await codeOf({ prefix: '/replicas/web/', after: '/replicas/api/api-1' })).toBe('CCA-E0692');
    expect(await codeOf({ prefix: '/replicas/', limit: 0 })).toBe('CCA-E0603');
    expect(await codeOf({ prefix: '/replicas/', wher: [] })).toBe('CCA-E0603');
    expect(await codeOf({ prefix: '/replicas/', revision: 999 })).toBe('CCA-E0102');
    await store.compact(3);
    const compacted = await call('QUERY', '/v1/state', { json: { prefix: '/replicas/', revision: 2 }, token: ADMIN });
    expect(compacted.status).toBe(410);
    expect((await errorOf(compacted)).code).toBe('CCA-E0101');
    const text = await call('QUERY', '/v1/state', { text: 'service=web', token: ADMIN, headers: { 'content-type': 'text/plain' } });
    expect((await errorOf(text)).code).toBe('CCA-E0607');
  });
});
