import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { buildKey } from '../../core/keys.js';
import { liveServer, type Live } from './harness.js';

const servers: Live[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

const svc = (name: string, after: string[] = []) =>
  `service ${name} {\n  image = "busybox:1.35"\n  command = ["sleep", "100"]\n${after.length ? `  after = [${after.map((a) => `"${a}"`).join(', ')}]\n` : ''}}\n`;

describe('cca apply and `after` cycles', () => {
  test('a cycle closed through services already stored is refused by the server, coded and named; nothing is written', async () => {
    const l = await liveServer();
    servers.push(l);
    const cwd = mkdtempSync(join(tmpdir(), 'cca-order-'));
    writeFileSync(join(cwd, 'stack.cca'), svc('db') + svc('cache', ['db']) + svc('api', ['cache']));
    expect((await l.run(['apply', 'stack.cca', '--yes'], { cwd })).code).toBe(0);
    const before = (await l.store.get(buildKey('service', 'db')))!.modRevision;
    // Locally the file alone is fine (db after api, api is not in it); only the server sees the cycle.
    writeFileSync(join(cwd, 'db.cca'), svc('db', ['api']));
    const r = await l.run(['apply', 'db.cca', '--yes'], { cwd });
    expect(r.code).toBe(1); // blame: user
    expect(r.stderr).toContain('CCA-E0306');
    expect(r.stderr).toContain('api → cache → db → api');
    expect(r.stderr).toContain('db.cca');
    expect((await l.store.get(buildKey('service', 'db')))!.modRevision).toBe(before);
    // The cycle inside one file is caught before anything is sent.
    writeFileSync(join(cwd, 'loop.cca'), svc('x', ['y']) + svc('y', ['x']));
    const local = await l.run(['apply', 'loop.cca', '--yes'], { cwd });
    expect(local.code).toBe(1);
    expect(local.stderr).toContain('x → y → x');
  });
});
