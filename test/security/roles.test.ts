import { readFile } from 'node:fs/promises';
import { describe, expect, test, vi } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import { readSse } from '../handlers/harness.js';
import { ADMIN, JOIN, errorOf, secured } from './support.js';

const web = await readFile('fixtures/web.cca', 'utf8');
const withSecret = { services: [{ name: 'api', image: 'busybox:1.35', secrets: [{ name: 'token', value: 's3cr3t-value', env: 'TOKEN' }] }] };

/** Issue 16 §3: admin ⊇ deployer ⊇ reader; join enrolls only; node credentials act for their own node. */
describe('roles', () => {
  test('a reader reads and watches, with secrets redacted, and may change nothing', async () => {
    const { call, newToken, store, enroll } = await secured();
    await enroll('n1');
    expect((await call('POST', '/v1/apply', { json: withSecret, token: ADMIN })).status).toBe(200);
    const { token: reader } = await newToken({ role: 'reader' });
    for (const path of ['/v1/services', '/v1/services/api', '/v1/replicas', '/v1/nodes', '/v1/volumes', '/v1/state?prefix=/services/', '/v1/services/api/endpoints']) {
      const r = await call('GET', path, { token: reader });
      expect(r.status, path).toBe(200);
      expect(await r.text(), path).not.toContain('s3cr3t');
    }
    const events = await readSse(await call('GET', '/v1/watch?prefix=/services/&from=1', { token: reader }), (es) => es.some((e) => e.event === 'batch'));
    expect(events.some((e) => e.event === 'batch')).toBe(true);
    expect(JSON.stringify(events)).not.toContain('s3cr3t');
    // The load balancer's feed (fixtures/lb) follows the endpoints with the same token.
    const feed = await readSse(await call('GET', '/v1/watch?prefix=/endpoints/api&from=1', { token: reader }), (es) => es.some((e) => e.event === 'open'));
    expect(feed.some((e) => e.event === 'open')).toBe(true);

    const before = await store.revision();
    const refused = [
      await call('POST', '/v1/apply', { text: web, token: reader }),
      await call('DELETE', '/v1/services/api', { token: reader }),
      await call('POST', '/v1/tokens', { json: { role: 'admin' }, token: reader }),
      await call('GET', '/v1/tokens', { token: reader }),
      await call('POST', '/v1/nodes/n1/fence', { json: { confirm: true }, token: reader }),
      await call('POST', '/v1/nodes/n1/reset', { token: reader }),
      await call('POST', '/v1/agent/enroll', { json: { node: 'n2' }, token: reader }),
    ];
    for (const r of refused) {
      expect(r.status).toBe(403);
      expect(await errorOf(r)).toMatchObject({ code: 'CCA-E0636' });
    }
    expect(await store.revision()).toBe(before);
  });

  test('a deployer applies and deletes, but creates no tokens, fences nothing and resets no node', async () => {
    const { call, newToken, store, enroll } = await secured();
    await enroll('n1');
    const { token: deployer } = await newToken({ role: 'deployer' });
    expect((await call('POST', '/v1/apply', { text: web, token: deployer })).status).toBe(200);
    expect((await call('GET', '/v1/services/web', { token: deployer })).status).toBe(200);
    expect((await call('DELETE', '/v1/services/web', { token: deployer })).status).toBe(200);
    const before = await store.revision();
    for (const [method, path, json] of [
      ['POST', '/v1/tokens', { role: 'reader' }],
      ['GET', '/v1/tokens', undefined],
      ['POST', '/v1/tokens/join/revoke', undefined],
      ['POST', '/v1/nodes/n1/fence', { confirm: true }],
      ['POST', '/v1/nodes/n1/reset', undefined],
    ] as const) {
      const r = await call(method, path, { token: deployer, ...(json ? { json } : {}) });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(await errorOf(r)).toMatchObject({ code: 'CCA-E0636' });
    }
    expect(await store.revision()).toBe(before);
  });

  test('join tokens and node credentials read nothing when reads are closed; anonymous requests are refused as unauthenticated', async () => {
    const { call, enroll } = await secured();
    const n1 = await enroll('n1');
    for (const token of [JOIN, n1]) expect(await errorOf(await call('GET', '/v1/services', { token }))).toMatchObject({ code: 'CCA-E0636' });
    const anon = await call('GET', '/v1/services');
    expect(anon.status).toBe(401);
    expect(await errorOf(anon)).toMatchObject({ code: 'CCA-E0605' });
  });

  test('open reads: anonymous requests get the reader role, and nothing more', async () => {
    const store = new MemoryStore();
    const { call, newToken } = await secured(store, { auth: { openReads: true } });
    expect((await call('POST', '/v1/apply', { json: withSecret, token: ADMIN })).status).toBe(200);
    const read = await call('GET', '/v1/services/api');
    expect(read.status).toBe(200);
    expect(await read.text()).not.toContain('s3cr3t');
    expect((await call('GET', '/v1/state?prefix=/services/')).status).toBe(200);
    for (const r of [await call('POST', '/v1/apply', { text: web }), await call('GET', '/v1/tokens'), await call('DELETE', '/v1/services/api')]) {
      expect(r.status).toBe(401);
      expect(await errorOf(r)).toMatchObject({ code: 'CCA-E0605' });
    }
    // A token that no longer works is refused with its reason even where reads are open.
    const reader = await newToken({ role: 'reader', expiresInSeconds: 1 });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 5_000);
      expect(await errorOf(await call('GET', '/v1/services', { token: reader.token }))).toMatchObject({ code: 'CCA-E0631' });
    } finally {
      vi.useRealTimers();
    }
  });
});
