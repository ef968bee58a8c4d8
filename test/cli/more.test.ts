import { mkdirSync, copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { expectGolden } from './golden.js';
import { ADMIN, at, cca, liveServer, seedNode, seedReplica, type Live } from './harness.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function live(): Promise<Live> {
  const l = await liveServer();
  closers.push(() => l.close());
  return l;
}

/** Something that is not a ccattler server: a proxy's error page, or a wrong answer. */
async function impostor(handler: (path: string) => { status: number; type: string; body: string }): Promise<string> {
  const srv: Server = createServer((req, res) => {
    const r = handler(req.url ?? '/');
    res.writeHead(r.status, { 'content-type': r.type }).end(r.body);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => srv.close(() => resolve())));
  return `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
}

describe('blame and exit codes', () => {
  test('an answer cca does not understand is external (exit 3): a proxy error page, a wrong shape', async () => {
    const proxy = await impostor(() => ({ status: 502, type: 'text/html', body: '<html><body>Bad Gateway</body></html>' }));
    const page = await cca(['get', 'services', '--server', proxy]);
    expectGolden('external-proxy', ['get', 'services', '--server', proxy], page);
    expect(page.code).toBe(3);
    const wrong = await impostor(() => ({ status: 200, type: 'application/json', body: '{"revision": 1, "services": [{"name": "web"}]}' }));
    const shape = await cca(['get', 'services', '--server', wrong, '-v']);
    expectGolden('external-shape', ['get', 'services', '--server', wrong, '-v'], shape);
    expect(shape.code).toBe(3);
  });
});

describe('every command against one live server', () => {
  test('global flags anywhere; each command answers', async () => {
    const l = await live();
    const cwd = mkdtempSync(join(tmpdir(), 'cca-all-'));
    mkdirSync(join(cwd, 'specs'));
    copyFileSync('test/cli/files/web.cca', join(cwd, 'specs/web.cca'));
    writeFileSync(join(cwd, 'specs/api.cca'), 'service api {\n  image = "busybox:1.35"\n  after = [web]\n}\n');
    const env = { CCA_STATE_DIR: mkdtempSync(join(tmpdir(), 'cca-all-state-')) };
    const g = ['--server', l.url, '--token', ADMIN];
    const run = (argv: string[]) => cca([...g, ...argv], { cwd, env });
    // A directory applies its .cca files together (api runs after web, both new).
    const applied = await run(['apply', 'specs', '--yes']);
    expect(applied.stdout).toContain('+ service api (new)\n+ service web (new)');
    expect(applied.code).toBe(0);
    const t1 = await seedNode(l.store, 'n1', 'a', 2000);
    await seedReplica(l.store, { service: 'web', id: 'web-1', node: 'n1', tenure: t1, state: 'running', ready: true });
    await l.store.put(
      buildKey('decision', 'replica', 'web-1', 'd1'),
      encodeFact('decision', { id: 'd1', kind: 'replica', subject: 'web-1', controller: 'scheduler', action: 'placed on n1', at: at(5), evidence: [], cause: { fact: '/services/web', modRevision: 1 }, reasons: ['fits'] }),
    );
    const results = {
      get: await run(['get', 'services']),
      getReplicas: await run(['-o', 'wide', 'get', 'replicas']),
      getNodes: await run(['get', 'nodes', '-o', 'json']),
      why: await run(['why', 'replica', 'web-1']),
      explain: await run(['explain', 'CCA-E0704']),
      fmt: await run(['fmt', '--check', 'specs']),
      version: await run(['version']),
      versionJson: await run(['version', '-o', 'json']),
      bundle: await run(['bundle', '-o', 'b.tar.gz']),
      delete: await run(['delete', 'service', 'api', '--yes']),
    };
    for (const [name, r] of Object.entries(results)) expect({ name, code: r.code, stderr: r.stderr }).toEqual({ name, code: 0, stderr: '' });
    expect(results.version.stdout).toMatch(/^server  test at http:\/\/127\.0\.0\.1:\d+$/m);
    expect(JSON.parse(results.versionJson.stdout)).toMatchObject({ cli: '0.1.0', server: { version: 'test' } });
    expect(results.why.stdout).toContain('replica web-1 placed on n1');
    expect(results.delete.stdout).toContain('service api deleted');
    expect(await l.store.get(buildKey('service', 'api'))).toBeNull();
  });
});

describe('live output', () => {
  test('--wait on a terminal rewrites one progress line in place', async () => {
    const l = await live();
    await l.run(['apply', 'test/cli/files/web.cca', '--yes']);
    await seedReplica(l.store, { service: 'web', id: 'web-1' });
    const r = await l.run(['apply', 'test/cli/files/web.cca', '--yes', '--wait', '--timeout', '200ms'], { stderrIsTTY: true });
    expect(r.code).toBe(2);
    expect(r.stderr.startsWith('\r\u001b[Kweb 0/2 running, 0 ready (1 pending: web-1: waiting for a node that fits)\n')).toBe(true);
  });

  test('get -w -o json prints one compact listing per line', async () => {
    const l = await live();
    await l.run(['apply', 'test/cli/files/web.cca', '--yes']);
    const stop = new AbortController();
    let poked = false;
    const r = await l.run(['get', 'services', '-w', '-o', 'json'], {
      signal: stop.signal,
      onWrite: (out) => {
        const lines = out.stdout.split('\n').filter(Boolean);
        if (!poked && lines.length === 1) {
          poked = true;
          void seedReplica(l.store, { service: 'web', id: 'web-9' });
        }
        if (lines.length >= 2) stop.abort();
      },
    });
    const lines = r.stdout.trim().split('\n').map((x) => JSON.parse(x) as { items: { replicas: number }[] });
    expect(lines.map((x) => x.items[0]!.replicas)).toEqual([0, 1]);
  });

  test('why -o json never carries a secret from the current value of its terminal', async () => {
    const l = await live();
    const cwd = mkdtempSync(join(tmpdir(), 'cca-why-'));
    writeFileSync(join(cwd, 'api.cca'), 'service api {\n  image = "busybox:1.35"\n  secret db { value = "hunter2-planted" env = "DB" }\n}\n');
    await l.run(['apply', 'api.cca', '--yes'], { cwd });
    const svc = (await l.store.get(buildKey('service', 'api')))!;
    await l.store.put(
      buildKey('decision', 'service', 'api', 'd1'),
      encodeFact('decision', { id: 'd1', kind: 'service', subject: 'api', controller: 'replica', action: 'scaled up by 1', at: at(1), evidence: [], cause: { fact: svc.key, modRevision: svc.modRevision }, reasons: [] }),
    );
    const r = await l.run(['why', 'service', 'api', '-o', 'json']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('(redacted)');
    expect(r.stdout).not.toContain('hunter2-planted');
  });
});
