import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/postgres-server.js';
import { waitFor } from '../support/wait.js';

/** The toolbox image's httpd: busybox httpd's flags, no busybox needed, never serves outside its home. */
describe('toolbox httpd', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cca-toolbox-'));
  const home = join(dir, 'www');
  let port = 0;
  let child: ChildProcess;
  beforeAll(async () => {
    mkdirSync(join(home, 'sub'), { recursive: true });
    writeFileSync(join(home, 'index.html'), '<h1>home</h1>');
    writeFileSync(join(home, 'sub', 'a.txt'), 'text a');
    writeFileSync(join(dir, 'secret.txt'), 'outside');
    symlinkSync(join(dir, 'secret.txt'), join(home, 'link.txt'));
    port = await freePort();
    child = spawn(process.execPath, ['--import', 'tsx', 'agent/toolbox/httpd.ts', '-f', '-p', `127.0.0.1:${port}`, '-h', home], { stdio: 'ignore' });
    await waitFor('the toolbox server to answer', () => fetch(`http://127.0.0.1:${port}/`).then((r) => r.ok, () => false), (ok) => ok, 20_000);
  });
  afterAll(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  /** Raw path (fetch would normalise `..` away before sending). */
  const get = (path: string, method = 'GET') =>
    new Promise<{ status: number; body: string; type: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type'] ?? '') }));
      });
      req.on('error', reject);
      req.end();
    });

  it('serves index.html for a directory and files with their type', async () => {
    expect(await get('/')).toMatchObject({ status: 200, body: '<h1>home</h1>', type: 'text/html; charset=utf-8' });
    expect(await get('/sub/a.txt?x=1')).toMatchObject({ status: 200, body: 'text a', type: 'text/plain; charset=utf-8' });
    expect(await get('/sub/a.txt', 'HEAD')).toMatchObject({ status: 200, body: '' });
  });

  it('never leaves its home: .., encoded .., symlinks out, NUL', async () => {
    for (const path of ['/../secret.txt', '/sub/../../secret.txt', '/%2e%2e/secret.txt', '/link.txt', '/a%00b', '/sub/', '/missing']) {
      expect((await get(path)).status, path).toBe(404);
    }
    expect((await get('/', 'POST')).status).toBe(501);
  });

  it('exits on SIGTERM (busybox httpd as PID 1 would not)', async () => {
    const p = await freePort();
    const c = spawn(process.execPath, ['--import', 'tsx', 'agent/toolbox/httpd.ts', '-p', String(p), '-h', home], { stdio: 'ignore' });
    await waitFor('the toolbox server to answer', () => fetch(`http://127.0.0.1:${p}/`).then((r) => r.ok, () => false), (ok) => ok, 20_000);
    const exited = new Promise<number | null>((r) => c.once('exit', (code) => r(code)));
    c.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses bad flags with a usage line', async () => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'agent/toolbox/httpd.ts', '-p', 'notaport'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr!.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => c.once('exit', (x) => r(x)));
    expect(code).toBe(1);
    expect(err).toContain('bad port in -p notaport');
  });
});
