import { describe, expect, it } from 'vitest';
import { createLogger } from '../../server/log.js';
import { ADMIN, securedApp } from './harness.js';

/** The pod's real logger (server/log.ts) into memory, at `level`. */
function memoryLog(level: 'info' | 'debug' = 'info') {
  const out: string[] = [];
  const log = createLogger({ level, format: 'json' }, { pod: 'p1' }, { write: (s: string) => void out.push(s) });
  return { log, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>), text: () => out.join('') };
}

describe('the access log (handlers/access-log.ts)', () => {
  it('one line per request: the route pattern, never the path, query or token', async () => {
    const m = memoryLog();
    const { call } = await securedApp(undefined, { log: m.log });
    await call('GET', '/v1/why/replica/web-secret-id?token=QUERY-SECRET', { token: ADMIN, headers: { 'x-request-id': 'case-1' } });
    await call('GET', '/v1/services', { token: 'cca_admin_NOT-A-REAL-TOKEN', headers: { 'x-request-id': 'case-2' } });
    const [a, b] = m.lines();
    expect(a).toMatchObject({ level: 'info', pod: 'p1', requestId: 'case-1', method: 'GET', route: '/v1/why/:kind/:name', msg: 'request' });
    expect(a!.durationMs).toEqual(expect.any(Number));
    expect(b).toMatchObject({ requestId: 'case-2', route: '/v1/services', status: 401 });
    expect(b!.code).toMatch(/^CCA-E06\d\d$/);
    for (const secret of ['web-secret-id', 'QUERY-SECRET', ADMIN, 'NOT-A-REAL-TOKEN', 'Bearer']) expect(m.text()).not.toContain(secret);
  });

  it('probes are debug lines; a bug is an error line with its stack, which the client never gets', async () => {
    const m = memoryLog('debug');
    const { call } = await securedApp(undefined, {
      log: m.log,
      why: async () => {
        throw new Error('boom in why');
      },
    });
    await call('GET', '/healthz');
    const r = await call('GET', '/v1/why/replica/x', { token: ADMIN });
    expect(r.status).toBe(500);
    const body = await r.text();
    expect(body).not.toMatch(/\n\s+at /);
    const [probe, bug] = m.lines();
    expect(probe).toMatchObject({ level: 'debug', route: '/healthz', status: 200 });
    expect(bug).toMatchObject({ level: 'error', route: '/v1/why/:kind/:name', status: 500, code: 'CCA-E0608' });
    expect(String((bug!.err as { stack?: string }).stack)).toContain('boom in why');
  });

  it('the logger blanks a token, secret or Authorization passed by mistake', () => {
    const m = memoryLog();
    m.log.info({ authorization: 'Bearer x1', token: 'x2', nested: { secret: 'x3', password: 'x4' }, headers: { cookie: 'x5' } }, 'oops');
    expect(m.text()).not.toMatch(/x[1-5]/);
    expect(m.lines()[0]).toMatchObject({ authorization: '[redacted]', token: '[redacted]', nested: { secret: '[redacted]' } });
  });
});
