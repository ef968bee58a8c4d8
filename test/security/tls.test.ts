import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { serverConfig } from '../../server/config.js';
import { loadServerTls } from '../../server/tls.js';
import { fetchTrusting, readCaFile } from '../../agent/https.js';
import { parseAgentFlags } from '../../agent/options.js';
import { startServer } from '../../server/start.js';
import { cca as inProcess } from '../cli/harness.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { waitFor } from '../support/wait.js';
import { makeTestCa, type TestCa } from '../support/tls-certs.js';

const root = join(import.meta.dirname, '..', '..');

interface Proc {
  child: ChildProcess;
  out(): string;
  exited: Promise<number | null>;
}

/** `cca ARGS…` as a real process (bin/cca.mjs), its output kept for assertions. */
function cca(args: string[], env: Record<string, string> = {}): Proc {
  const base: Record<string, string | undefined> = { ...process.env, ...baseEnv };
  // Nothing from the environment of whoever runs the tests: only what each case passes.
  for (const name of ['CCA_SERVER', 'CCA_TOKEN', 'CCA_CA', 'CCA_TLS_CERT', 'CCA_TLS_KEY']) delete base[name];
  const child = spawn(process.execPath, ['bin/cca.mjs', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, ...env } });
  let text = '';
  child.stdout!.on('data', (b: Buffer) => (text += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (text += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, out: () => text, exited };
}

async function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  const p = cca(args, env);
  const code = await p.exited;
  return { code, out: p.out() };
}

let tmp: string;
let baseEnv: Record<string, string>;
let ca: TestCa;
let stranger: TestCa;
let server: Proc;
let url: string;
const agents: Proc[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'cca-tls-'));
  // No user config, and the journal in the temp dir: the test sees only what it passes.
  baseEnv = { CCA_CONFIG: join(tmp, 'none.json'), CCA_STATE_DIR: join(tmp, 'state') };
  // The fake runtime offers the images of its catalogue: one, so `web` can be placed.
  mkdirSync(join(tmp, 'images'));
  writeFileSync(join(tmp, 'images', 'catalogue.json'), JSON.stringify({ 'busybox:1.35': { name: 'busybox:1.35', digest: 'sha256:fake', archive: 'none.tar' } }));
  ca = makeTestCa(tmp, 'ca');
  stranger = makeTestCa(tmp, 'stranger');
  const cert = ca.issue('server');
  server = cca(['server', '--store', 'memory:', '--port', '0', '--tls-cert', cert.cert, '--tls-key', cert.key, '--workers', '2'], { CCA_ADMIN_TOKEN: ADMIN, CCA_JOIN_TOKEN: JOIN });
  url = await waitFor('the server to listen', () => /listening on (\S+)/.exec(server.out())?.[1], { timeoutMs: 30_000, everyMs: 100 });
}, 60_000);

afterAll(async () => {
  for (const p of [...agents, server]) {
    if (p?.child.exitCode === null) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  }
  rmSync(tmp, { recursive: true, force: true });
});

describe('the server, an agent and the CLI over TLS with a private CA', () => {
  test('the server prints an https:// URL', () => {
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  test('an agent with --ca registers; cca apply --wait (watch over TLS) sees a replica placed and running on it', async () => {
    const agent = cca(['agent', '--server', url, '--ca', ca.cert, '--node', 'tls1', '--token', JOIN, '--runtime', 'fake', '--images', join(tmp, 'images'), '--state-dir', join(tmp, 'agent-tls1')]);
    agents.push(agent);
    await waitFor('the agent to register', () => /registered: lease/.test(agent.out()), { timeoutMs: 30_000, everyMs: 100 });
    const spec = join(tmp, 'web.cca');
    writeFileSync(spec, 'service web {\n  image    = "busybox:1.35"\n  command  = ["httpd", "-f"]\n  replicas = 1\n  cpu      = 0.25\n  memory   = 64Mi\n}\n');
    const applied = await run(['apply', spec, '--yes', '--wait', '--timeout', '60s', '--server', url, '--ca', ca.cert, '--token', ADMIN]);
    expect(applied.out).not.toMatch(/CCA-E/);
    expect(applied.out).toContain('converged: web 1/1 ready');
    expect(applied.code).toBe(0);
    const got = await run(['get', 'replicas', '-o', 'json', '--server', url, '--ca', ca.cert, '--token', ADMIN]);
    expect(got.code).toBe(0);
    const items = (JSON.parse(got.out) as { items: { node: string; state: string }[] }).items;
    expect(items.map((r) => [r.node, r.state])).toEqual([['tls1', 'running']]);
    expect(agent.out()).not.toMatch(/CCA-E0540/);
  }, 90_000);

  test('cca get -w follows the watch over TLS and ends cleanly when interrupted', async () => {
    const stop = new AbortController();
    const r = await inProcess(['get', 'replicas', '-w', '--server', url, '--ca', ca.cert, '--token', ADMIN], {
      signal: stop.signal,
      onWrite: (out) => {
        if (/tls1 +running/.test(out.stdout)) stop.abort();
      },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/web-\S+ +web +tls1 +running/);
  }, 30_000);

  test('the CLI finds the CA in CCA_CA and in the config file ("ca", relative to the file)', async () => {
    const viaEnv = await run(['get', 'nodes', '--server', url, '--token', ADMIN], { CCA_CA: ca.cert });
    expect(viaEnv).toMatchObject({ code: 0 });
    expect(viaEnv.out).toContain('tls1');
    const config = join(tmp, 'config.json');
    writeFileSync(config, JSON.stringify({ server: url, token: ADMIN, ca: 'ca.pem' }));
    chmodSync(config, 0o600);
    const viaFile = await run(['get', 'nodes'], { CCA_CONFIG: config });
    expect(viaFile).toMatchObject({ code: 0 });
    expect(viaFile.out).toContain('tls1');
  }, 60_000);

  test('the CLI without --ca, or with the wrong CA, fails with CCA-E0740 naming the server and --ca (exit 2), no stack trace', async () => {
    for (const extra of [[], ['--ca', stranger.cert]]) {
      const r = await run(['get', 'services', '--server', url, '--token', ADMIN, ...extra]);
      expect(r.code).toBe(2);
      expect(r.out).toContain(`error CCA-E0740: cca does not trust the certificate of the server at ${url}`);
      expect(r.out).toContain('--ca FILE');
      expect(r.out).not.toMatch(/\n\s+at /);
    }
  }, 60_000);

  test('the console is served over TLS, talks to its own origin only and names no http:// URL', async () => {
    const fetchTls = fetchTrusting(readCaFile(ca.cert));
    const page = await fetchTls(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
    const html = await page.text();
    const scripts = [...html.matchAll(/src="([^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const path of ['/web/live.js', '/web/sse.js', ...scripts]) {
      const r = await fetchTls(new URL(path, url));
      expect(r.status, path).toBe(200);
      expect(await r.text(), path).not.toMatch(/\bhttps?:\/\//);
    }
    expect(html).not.toMatch(/\bhttp:\/\//);
  });

  test('a CA file that is missing or not a certificate is CCA-E0004 naming it (exit 1)', async () => {
    const missing = await run(['get', 'services', '--server', url, '--ca', join(tmp, 'nope.pem')]);
    expect(missing.code).toBe(1);
    expect(missing.out).toContain(`error CCA-E0004: --ca ${join(tmp, 'nope.pem')} cannot be used`);
    const notPem = await run(['get', 'services', '--server', url, '--ca', ca.key]);
    expect(notPem.code).toBe(1);
    expect(notPem.out).toContain('holds no PEM certificate');
  }, 60_000);

  test('an agent without --ca logs CCA-E0540 (naming the server, saying --ca) and keeps retrying', async () => {
    const agent = cca(['agent', '--server', url, '--node', 'tls2', '--token', JOIN, '--runtime', 'fake', '--images', join(tmp, 'images'), '--state-dir', join(tmp, 'agent-tls2')]);
    agents.push(agent);
    await waitFor('CCA-E0540 in the agent log', () => agent.out().includes('CCA-E0540'), { timeoutMs: 30_000, everyMs: 100 });
    expect(agent.out()).toContain(`the agent does not trust the certificate of the server at ${url}`);
    expect(agent.out()).toContain('--ca FILE');
    expect(agent.out()).not.toMatch(/\n\s+at /);
    expect(agent.child.exitCode).toBeNull();
  }, 60_000);
});

describe('a scheme that does not match the server', () => {
  test('http:// to the HTTPS server, and https:// to a plain one, say which scheme to use (CCA-E0701)', async () => {
    const toTls = await inProcess(['get', 'services', '--server', url.replace('https://', 'http://'), '--token', ADMIN]);
    expect(toTls.code).toBe(2);
    expect(toTls.stderr).toContain('error CCA-E0701');
    expect(toTls.stderr).toContain('if the server serves HTTPS, use an https:// URL');
    const plain = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: true, workers: 0, version: 'test' });
    try {
      for (const extra of [[], ['--ca', ca.cert]]) {
        const toPlain = await inProcess(['get', 'services', '--server', plain.url.replace('http://', 'https://'), ...extra]);
        expect(toPlain.code).toBe(2);
        expect(toPlain.stderr).toContain('the server did not answer in TLS: if it serves plain HTTP, use an http:// URL');
      }
    } finally {
      await plain.stop();
    }
  });
});

describe('agent TLS settings', () => {
  test('--ca, CCA_CA or "ca" in the --config file is read at start; a bad file is CCA-E0004', () => {
    const pem = readFileSync(ca.cert, 'utf8');
    const base = ['--server', 'https://127.0.0.1:1', '--node', 'n1'];
    expect(parseAgentFlags([...base, '--ca', ca.cert], {}).ca).toBe(pem);
    expect(parseAgentFlags(base, { CCA_CA: ca.cert }).ca).toBe(pem);
    const config = join(tmp, 'agent.json');
    writeFileSync(config, JSON.stringify({ ca: ca.cert }));
    expect(parseAgentFlags([...base, '--config', config], {}).ca).toBe(pem);
    expect(parseAgentFlags(base, {}).ca).toBeUndefined();
    expect(() => parseAgentFlags([...base, '--ca', ca.key], {})).toThrow(/CCA-E0004.*holds no PEM certificate/);
  });
});

describe('server TLS settings', () => {
  test('--tls-cert and --tls-key go together (CCA-E0603)', () => {
    for (const argv of [['--tls-cert', 'c.pem'], ['--tls-key', 'k.pem']]) {
      expect(() => serverConfig(argv, {})).toThrow(/--tls-cert and --tls-key go together/);
    }
    expect(serverConfig(['--tls-cert', 'c.pem', '--tls-key', 'k.pem'], {})).toMatchObject({ tlsCert: 'c.pem', tlsKey: 'k.pem' });
    expect(serverConfig([], { CCA_TLS_CERT: 'c.pem', CCA_TLS_KEY: 'k.pem' })).toMatchObject({ tlsCert: 'c.pem', tlsKey: 'k.pem' });
  });

  test('an unreadable, invalid or mismatched certificate or key is CCA-E0004 naming the file', () => {
    const good = ca.issue('other');
    const expectE0004 = (f: () => unknown, file: string, reason: RegExp) => {
      try {
        f();
        expect.unreachable();
      } catch (e) {
        expect(isCcaError(e, 'CCA-E0004')).toBe(true);
        expect((e as Error).message).toContain(file);
        expect((e as Error).message).toMatch(reason);
      }
    };
    expectE0004(() => loadServerTls(join(tmp, 'missing.pem'), good.key), join(tmp, 'missing.pem'), /ENOENT/);
    expectE0004(() => loadServerTls(good.key, good.key), good.key, /not a PEM certificate/);
    expectE0004(() => loadServerTls(good.cert, good.cert), good.cert, /not a usable PEM private key/);
    expectE0004(() => loadServerTls(good.cert, ca.key), ca.key, /does not belong to the certificate/);
    expect(loadServerTls(good.cert, good.key).cert).toContain('BEGIN CERTIFICATE');
    expectE0004(() => readCaFile(good.key), good.key, /holds no PEM certificate/);
  });

  test('cca server with a bad key exits 1 with CCA-E0004, before listening', async () => {
    const good = ca.issue('third');
    const r = await run(['server', '--store', 'memory:', '--port', '0', '--tls-cert', good.cert, '--tls-key', join(tmp, 'absent.key')]);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`CCA-E0004`);
    expect(r.out).toContain(join(tmp, 'absent.key'));
    expect(r.out).not.toContain('listening');
  }, 30_000);
});
