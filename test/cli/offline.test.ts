import { chmodSync, copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { allDiagnostics } from '../../core/diagnostics/index.js';
import { redactArgs } from '../../cli/journal.js';
import { requestIds } from '../../cli/request-id.js';
import { expectGolden } from './golden.js';
import { cca, closedUrl } from './harness.js';

const nowhere = await closedUrl();

const files = 'test/cli/files';
const golden = async (name: string, argv: string[], opts = {}) => {
  const r = await cca(argv, opts);
  expectGolden(name, argv, r);
  return r;
};

describe('offline commands', () => {
  test('help, and an unknown command or flag is a coded user error with the usage', async () => {
    expect((await golden('help', ['help'])).code).toBe(0);
    expect((await golden('unknown-command', ['aply', 'x.cca'])).code).toBe(1);
    expect((await golden('bad-flag', ['get', 'services', '--frobnicate'])).code).toBe(1);
    expect((await golden('bad-flag-json', ['get', 'services', '--frobnicate', '--output', 'json'])).code).toBe(1);
    expect((await golden('bad-output-mode', ['get', 'services', '-o', 'table'])).code).toBe(1);
    expect((await cca(['apply', '--help'])).stdout).toMatch(/^cca apply: .*\n\nusage:\n  cca apply /);
  });

  test('explain: plain, json, --all, and an unknown code', async () => {
    expect((await golden('explain-plain', ['explain', 'CCA-E0701'])).code).toBe(0);
    expect((await golden('explain-short', ['explain', 'e0210'])).code).toBe(0);
    const json = await golden('explain-json', ['explain', 'CCA-E0709', '-o', 'json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ code: 'CCA-E0709', blame: 'environment' });
    const all = await cca(['explain', '--all']);
    expect(all.stdout.trim().split('\n')).toHaveLength(allDiagnostics().length);
    expect((await golden('explain-unknown', ['explain', 'CCA-E9999'])).code).toBe(1);
    expect((await golden('explain-unknown-verbose', ['explain', 'CCA-E9999', '--verbose'])).code).toBe(1);
  });

  test('fmt: --check passes and fails, rewriting, syntax errors with file:line:col and caret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cca-fmt-'));
    copyFileSync(join(files, 'ugly.cca'), join(dir, 'ugly.cca'));
    copyFileSync(join(files, 'web.cca'), join(dir, 'web.cca'));
    copyFileSync(join(files, 'bad.cca'), join(dir, 'bad.cca'));
    expect((await golden('fmt-check-ok', ['fmt', '--check', 'web.cca'], { cwd: dir })).code).toBe(0);
    expect((await golden('fmt-check-fails', ['fmt', '--check', 'ugly.cca', 'web.cca'], { cwd: dir })).code).toBe(1);
    expect((await golden('fmt-check-json', ['fmt', '--check', 'ugly.cca', '-o', 'json'], { cwd: dir })).code).toBe(1);
    expect((await golden('fmt-rewrite', ['fmt', 'ugly.cca', 'web.cca'], { cwd: dir })).code).toBe(0);
    expect(readFileSync(join(dir, 'ugly.cca'), 'utf8')).toBe('service web {\n  image    = "busybox:1.35"\n  replicas = 1\n}\n');
    writeFileSync(join(dir, 'broken.cca'), 'service web {\n  image = "busybox:1.35"\n  cpu = [1,\n');
    expect((await golden('fmt-syntax-error', ['fmt', 'broken.cca'], { cwd: dir })).code).toBe(1);
    expect((await golden('fmt-missing-file', ['fmt', 'nope.cca'], { cwd: dir })).code).toBe(1);
  });

  test('version works without a server; an unreachable one is reported, not fatal', async () => {
    const r = await golden('version-offline', ['version', '--server', nowhere]);
    expect(r.code).toBe(0);
  });
});

describe('errors and exit codes', () => {
  test('anything unexpected becomes CCA-E0001, blamed on us (exit 70), never a stack trace', async () => {
    const { main } = await import('../../cli/main.js');
    let stderr = '';
    const io = {
      stdout: { write: () => { throw new TypeError('stdout went away'); }, isTTY: false },
      stderr: { write: (s: string) => void (stderr += s), isTTY: false },
      stdinIsTTY: false,
      prompt: async () => '',
      env: { CCA_STATE_DIR: mkdtempSync(join(tmpdir(), 'cca-bug-')) },
      cwd: process.cwd(),
      signal: new AbortController().signal,
      now: () => 0,
    };
    expect(await main(['explain', 'E0701'], io)).toBe(70);
    expect(stderr).toBe('error CCA-E0001: an unexpected failure happened in the cca command line: TypeError: stdout went away\n  fix: report this with `cca bundle`; nothing you did caused it\n');
  });

  test('a --request-id the server would not accept is refused before sending', async () => {
    expect((await golden('bad-request-id', ['get', 'services', '--request-id', 'has spaces'])).code).toBe(1);
  });

  test('a server that is not an http(s) URL is refused, naming where it came from', async () => {
    expect((await cca(['get', 'nodes'], { env: { CCA_SERVER: 'localhost:7070' } })).stderr).toContain('error CCA-E0703: cca: CCA_SERVER must be an http:// or https:// URL, not "localhost:7070"');
  });

  test('a directory without .cca files is a coded error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cca-empty-'));
    const r = await cca(['fmt', '.'], { cwd: dir });
    expect(r).toMatchObject({ code: 1, stderr: expect.stringContaining('error CCA-E0705: cannot read .: the directory holds no .cca files') });
  });

  test('an unreachable server is a coded environment error naming the URL, in each mode, with the request ID', async () => {
    const argv = ['get', 'services', '--server', nowhere];
    const plain = await golden('unreachable-plain', argv);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain(`could not reach the server at ${nowhere}: ECONNREFUSED`);
    expect(plain.stderr).toMatch(/\n  request: c-[0-9a-z]+-[0-9a-f]{8}-0\n/);
    expect((await golden('unreachable-verbose', [...argv, '--verbose', '--request-id', 'support-case-17'])).stderr).toContain('request: support-case-17');
    const json = await golden('unreachable-json', [...argv, '--output', 'json', '--request-id', 'support-case-17']);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'CCA-E0701', blame: 'environment', exitCode: 2, requestId: 'support-case-17' } });
    expect(`${plain.stderr}${json.stderr}`).not.toMatch(/\n\s+at /);
  });

  test('request IDs: a random part, unique per request; --request-id is used as given, then numbered', () => {
    const a = requestIds(0);
    const b = requestIds(0);
    const [a0, a1, b0] = [a(), a(), b()];
    expect(a0).toMatch(/^c-0-[0-9a-f]{8}-0$/);
    expect(a1).toBe(a0.replace(/-0$/, '-1'));
    expect(b0).not.toBe(a0);
    const given = requestIds(0, 'case-9');
    expect([given(), given(), given()]).toEqual(['case-9', 'case-9.1', 'case-9.2']);
    expect(redactArgs(['get', '--token', 'cca_admin_x', '--token=abc'])).toEqual(['get', '--token', '(redacted)', '--token=(redacted)']);
  });

  test('the config file: used when 0600; refused (exit 2) when others can read it; malformed is coded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cca-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ server: nowhere, token: 'cca_admin_fromconfig' }));
    chmodSync(file, 0o644);
    const open = await cca(['get', 'nodes'], { env: { CCA_CONFIG: file } });
    expect(open.code).toBe(2);
    expect(open.stderr.replace(file, 'CONFIG')).toContain('error CCA-E0706: the config file CONFIG has mode 0644');
    chmodSync(file, 0o600);
    const used = await cca(['get', 'nodes'], { env: { CCA_CONFIG: file } });
    expect(used.stderr).toContain(`could not reach the server at ${nowhere}:`);
    const env = await cca(['get', 'nodes'], { env: { CCA_CONFIG: file, CCA_SERVER: 'http://127.0.0.1:2' } });
    expect(env.stderr).toContain('http://127.0.0.1:2');
    const flag = await cca(['get', 'nodes', '--server', 'http://127.0.0.1:3'], { env: { CCA_CONFIG: file, CCA_SERVER: 'http://127.0.0.1:2' } });
    expect(flag.stderr).toContain('http://127.0.0.1:3');
    writeFileSync(file, '{"server": 7}');
    expect((await cca(['get', 'nodes'], { env: { CCA_CONFIG: file } })).stderr).toContain('CCA-E0707');
    // Offline commands never read it.
    chmodSync(file, 0o644);
    expect((await cca(['explain', 'E0101'], { env: { CCA_CONFIG: file } })).code).toBe(0);
  });
});
