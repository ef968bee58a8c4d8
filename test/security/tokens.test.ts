import { afterAll, describe, expect, test, vi } from 'vitest';
import { prefixOf } from '../../core/keys.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { createTestDatabase } from '../support/databases.js';
import { ADMIN, JOIN, errorOf, secured } from './support.js';

/** Issue 16 §1–2: tokens with a role, an expiry and a use count, listed and revoked; only hashes stored. */
describe('issued tokens', () => {
  test('created once, listed without the token or its hash, the bootstrap ones among them', async () => {
    const { call, newToken, store } = await secured();
    const t = await newToken({ role: 'reader', name: 'grafana', expiresInSeconds: 3600 });
    expect(t.token).toMatch(new RegExp(`^cca_reader_${t.id}_[\\w-]{43}$`));
    const listing = await (await call('GET', '/v1/tokens', { token: ADMIN })).text();
    expect(listing).not.toContain(t.token);
    expect(listing).not.toMatch(/sha256|[0-9a-f]{64}/);
    const { tokens } = JSON.parse(listing) as { tokens: { id: string; role: string; name: string; state: string; expiresAt: number | null }[] };
    expect(tokens.map((x) => x.id).sort()).toEqual(['admin', 'join', t.id].sort());
    expect(tokens.find((x) => x.id === t.id)).toMatchObject({ role: 'reader', name: 'grafana', state: 'active' });
    // Only the hash is stored.
    expect(JSON.stringify((await store.range({ prefix: prefixOf('authToken') })).kvs)).not.toContain(t.token);
    expect((await call('GET', '/v1/services', { token: t.token })).status).toBe(200);
    // Uses count enrollments: a reader token has none.
    expect(await errorOf(await call('POST', '/v1/tokens', { json: { role: 'reader', uses: 3 }, token: ADMIN }))).toMatchObject({ code: 'CCA-E0603' });
  });

  test('an expired token authenticates as nothing, with a code saying so', async () => {
    const { call, newToken, enroll } = await secured();
    const reader = await newToken({ role: 'reader', expiresInSeconds: 60 });
    const join = await newToken({ role: 'join', expiresInSeconds: 60 });
    expect((await call('GET', '/v1/services', { token: reader.token })).status).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 61_000);
      const r = await call('GET', '/v1/services', { token: reader.token });
      expect(r.status).toBe(401);
      expect(await errorOf(r)).toMatchObject({ code: 'CCA-E0631', params: { role: 'reader', id: reader.id } });
      expect(await errorOf(await call('POST', '/v1/agent/enroll', { json: { node: 'n9' }, token: join.token }))).toMatchObject({ code: 'CCA-E0631' });
      // The bootstrap join token has no expiry.
      await enroll('n9');
    } finally {
      vi.useRealTimers();
    }
  });

  test('a used-up join token enrolls nothing more; a revoked one is refused as revoked', async () => {
    const { call, newToken, enroll, store } = await secured();
    const t = await newToken({ role: 'join', uses: 2, name: 'rack 4' });
    expect(t.usesLeft).toBe(2);
    await enroll('n1', t.token);
    await enroll('n2', t.token);
    const before = await store.revision();
    const third = await call('POST', '/v1/agent/enroll', { json: { node: 'n3' }, token: t.token });
    expect(third.status).toBe(401);
    expect(await errorOf(third)).toMatchObject({ code: 'CCA-E0632', params: { uses: 2 } });
    expect(await store.revision()).toBe(before);
    const listed = (await (await call('GET', '/v1/tokens', { token: ADMIN })).json()) as { tokens: { id: string; usesLeft: number; state: string }[] };
    expect(listed.tokens.find((x) => x.id === t.id)).toMatchObject({ usesLeft: 0, state: 'used up' });

    const deployer = await newToken({ role: 'deployer' });
    expect((await call('POST', `/v1/tokens/${deployer.id}/revoke`, { token: ADMIN })).status).toBe(200);
    const revoked = await call('DELETE', '/v1/services/web', { token: deployer.token });
    expect(revoked.status).toBe(401);
    expect(await errorOf(revoked)).toMatchObject({ code: 'CCA-E0633', params: { id: deployer.id } });
    expect(await errorOf(await call('POST', '/v1/tokens/0123456789ab/revoke', { token: ADMIN }))).toMatchObject({ code: 'CCA-E0637' });
    expect(await errorOf(await call('POST', '/v1/tokens/no-such-id/revoke', { token: ADMIN }))).toMatchObject({ code: 'CCA-E0637' });
    // The bootstrap join token can be revoked too (a leaked one), and says so.
    expect((await call('POST', '/v1/tokens/join/revoke', { token: ADMIN })).status).toBe(200);
    expect(await errorOf(await call('POST', '/v1/agent/enroll', { json: { node: 'n4' }, token: JOIN }))).toMatchObject({ code: 'CCA-E0633' });
    // A restart installing the same preset token (CCA_JOIN_TOKEN, npm start's tokens.json) does not resurrect it.
    const { ensureTokens } = await import('../../handlers/auth.js');
    await ensureTokens(store, { admin: ADMIN, join: JOIN });
    expect(await errorOf(await call('POST', '/v1/agent/enroll', { json: { node: 'n4' }, token: JOIN }))).toMatchObject({ code: 'CCA-E0633' });
  });
});

describe('racing enrollments on the last use', () => {
  const dbs: { drop(): Promise<void> }[] = [];
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    for (const s of stores) await s.close();
    for (const d of dbs) await d.drop();
  });

  for (const backend of ['memory', 'postgres'] as const) {
    test(`${backend}: ten enrollments, one use: exactly one credential`, async () => {
      let ctx;
      if (backend === 'postgres') {
        const db = await createTestDatabase('identity');
        dbs.push(db);
        const store = await PostgresStore.open(db.url);
        stores.push(store);
        ctx = await secured(store);
      } else ctx = await secured();
      const { call, newToken, store } = ctx;
      const t = await newToken({ role: 'join', uses: 1 });
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => call('POST', '/v1/agent/enroll', { json: { node: `r${i}` }, token: t.token })));
      const ok = answers.filter((a) => a.status === 200);
      expect(ok).toHaveLength(1);
      for (const a of answers.filter((x) => x.status !== 200)) expect(await errorOf(a)).toMatchObject({ code: 'CCA-E0632' });
      expect((await store.range({ prefix: prefixOf('nodeCredential') })).kvs).toHaveLength(1);
    });
  }
});
