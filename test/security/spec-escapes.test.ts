/**
 * Issue 16 §2: a spec cannot reach outside its replica. Each escape found by the review is
 * refused at apply with a coded diagnostic located in the `.cca` source — through the
 * language API, the HTTP API (dry run and real apply, text and JSON) and `cca apply
 * --dry-run` — and nothing reaches the store.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parse } from '../../core/lang/index.js';
import { cleanPathProblem, fileModeProblem, serviceSpecSchema, specPathProblem, storedServiceSpecSchema, validateService } from '../../core/model/index.js';
import { liveServer, type Live } from '../cli/harness.js';
import { ADMIN, securedApp } from '../handlers/harness.js';

interface Escape {
  title: string;
  /** One line inside `service web { image = … <here> }`. */
  line: string;
  code: string;
  /** Where the caret must point: the first occurrence of this text on that line. */
  at: string;
  /** The same escape as a JSON spec, for the API's JSON form. */
  json: Record<string, unknown>;
  /** A service name other than web (the bad-name case). */
  service?: string;
}

const escapes: Escape[] = [
  {
    title: 'a config path climbing out with ..',
    line: 'config keys { path = "/../../../../root/.ssh/authorized_keys" content = "ssh-ed25519 AAAA" }',
    code: 'CCA-E0324',
    at: '"/../../../../root/.ssh/authorized_keys"',
    json: { configs: [{ name: 'keys', path: '/../../../../root/.ssh/authorized_keys', content: 'x' }] },
  },
  {
    title: 'a secret path climbing out with ..',
    line: 'secret pw { value = "s3cret" path = "/run/secrets/../../../etc/shadow" }',
    code: 'CCA-E0324',
    at: '"/run/secrets/../../../etc/shadow"',
    json: { secrets: [{ name: 'pw', value: 's3cret', path: '/run/secrets/../../../etc/shadow' }] },
  },
  {
    title: 'an empty component (//)',
    line: 'config app { path = "/etc//app.conf" content = "x" }',
    code: 'CCA-E0324',
    at: '"/etc//app.conf"',
    json: { configs: [{ name: 'app', path: '/etc//app.conf', content: 'x' }] },
  },
  {
    title: 'a trailing slash',
    line: 'config app { path = "/etc/app.conf/" content = "x" }',
    code: 'CCA-E0324',
    at: '"/etc/app.conf/"',
    json: { configs: [{ name: 'app', path: '/etc/app.conf/', content: 'x' }] },
  },
  {
    title: 'a NUL in a path',
    line: 'config app { path = "/etc/app\\0.conf" content = "x" }',
    code: 'CCA-E0324',
    at: '"/etc/app\\0.conf"',
    json: { configs: [{ name: 'app', path: '/etc/app\0.conf', content: 'x' }] },
  },
  {
    title: 'a relative path',
    line: 'secret pw { value = "s3cret" path = "run/secrets/pw" }',
    code: 'CCA-E0324',
    at: '"run/secrets/pw"',
    json: { secrets: [{ name: 'pw', value: 's3cret', path: 'run/secrets/pw' }] },
  },
  {
    title: 'a workdir climbing out with ..',
    line: 'workdir = "/app/../../../etc"',
    code: 'CCA-E0324',
    at: '"/app/../../../etc"',
    json: { workdir: '/app/../../../etc' },
  },
  {
    title: 'a volume mount injecting src=/ into the mount syntax',
    line: 'volume data { size = 1Gi mount = "/data,src=/" }',
    code: 'CCA-E0325',
    at: '"/data,src=/"',
    json: { volumes: [{ name: 'data', sizeBytes: 2 ** 30, mountPath: '/data,src=/' }] },
  },
  {
    title: 'a config path injecting src=/ into the mount syntax',
    line: 'config app { path = "/etc/app.conf,src=/" content = "x" }',
    code: 'CCA-E0325',
    at: '"/etc/app.conf,src=/"',
    json: { configs: [{ name: 'app', path: '/etc/app.conf,src=/', content: 'x' }] },
  },
  {
    title: 'a secret path with a quote',
    line: 'secret pw { value = "s3cret" path = "/run/\\"pw" }',
    code: 'CCA-E0325',
    at: '"/run/\\"pw"',
    json: { secrets: [{ name: 'pw', value: 's3cret', path: '/run/"pw' }] },
  },
  {
    title: 'a volume over /proc',
    line: 'volume data { size = 1Gi mount = "/proc/sys" }',
    code: 'CCA-E0326',
    at: '"/proc/sys"',
    json: { volumes: [{ name: 'data', sizeBytes: 2 ** 30, mountPath: '/proc/sys' }] },
  },
  {
    title: 'a volume over the whole root',
    line: 'volume data { size = 1Gi mount = "/" }',
    code: 'CCA-E0326',
    at: '"/"',
    json: { volumes: [{ name: 'data', sizeBytes: 2 ** 30, mountPath: '/' }] },
  },
  {
    title: 'a setuid config mode',
    line: 'config tool { path = "/usr/local/bin/tool" content = "#!/bin/sh" mode = "4755" }',
    code: 'CCA-E0327',
    at: '"4755"',
    json: { configs: [{ name: 'tool', path: '/usr/local/bin/tool', content: 'x', mode: 0o4755 }] },
  },
  {
    title: 'a setgid config mode',
    line: 'config tool { path = "/usr/local/bin/tool" content = "#!/bin/sh" mode = "2755" }',
    code: 'CCA-E0327',
    at: '"2755"',
    json: { configs: [{ name: 'tool', path: '/usr/local/bin/tool', content: 'x', mode: 0o2755 }] },
  },
  {
    title: 'a sticky secret mode',
    line: 'secret pw { value = "s3cret" path = "/run/secrets/pw" mode = "1600" }',
    code: 'CCA-E0327',
    at: '"1600"',
    json: { secrets: [{ name: 'pw', value: 's3cret', path: '/run/secrets/pw', mode: 0o1600 }] },
  },
  {
    title: 'a volume name that is a path',
    line: 'volume "../../../etc" { size = 1Gi mount = "/data" }',
    code: 'CCA-E0301',
    at: '"../../../etc"',
    json: { volumes: [{ name: '../../../etc', sizeBytes: 2 ** 30, mountPath: '/data' }] },
  },
  {
    title: 'a service name that is a path',
    line: 'replicas = 1',
    code: 'CCA-E0301',
    at: '',
    service: '"../evil"',
    json: { name: '../evil' },
  },
];

const sourceOf = (e: Escape) => `service ${e.service ?? 'web'} {\n  image = "busybox:1.35"\n  ${e.line}\n}\n`;

/** Line and column (1-based) where the caret must be. */
function expectedSpan(e: Escape): { line: number; col: number } {
  if (e.service !== undefined) return { line: 1, col: 'service '.length + 1 };
  return { line: 3, col: 2 + e.line.indexOf(e.at) + 1 };
}

describe('the model refuses each escape with a coded, located diagnostic', () => {
  for (const e of escapes) {
    test(`language API: ${e.title} is ${e.code}`, () => {
      const r = parse(sourceOf(e), 'evil.cca');
      expect(r.services).toEqual([]);
      const d = r.diagnostics.find((x) => x.code === e.code);
      expect(d, JSON.stringify(r.diagnostics)).toBeDefined();
      expect(d!.span).toMatchObject({ file: 'evil.cca', ...expectedSpan(e) });
      expect(d!.blame).toBe('user');
      expect(d!.fix.length).toBeGreaterThan(0);
    });
  }

  test('reported in the same run as an unrelated mistake in the service', () => {
    const src = 'service web {\n  image = "busybox:1.35"\n  replica = 3\n  config a { path = "/../x" content = "x" mode = "4755" }\n}\n';
    const found = parse(src, 'evil.cca').diagnostics.map((d) => `${d.code} ${d.span?.line}:${d.span?.col}`);
    expect(found).toEqual(['CCA-E0210 3:3', 'CCA-E0324 4:21', 'CCA-E0327 4:50']);
  });

  test('paths and modes the fixtures use stay accepted', () => {
    for (const p of ['/etc/motd', '/run/secrets/pg-password', '/var/lib/postgresql/data', '/www/index.html', '/etc/shop/api.toml', '/models', '/.config/app']) {
      expect(specPathProblem(p, 'config'), p).toBeUndefined();
      expect(specPathProblem(p, 'volume'), p).toBeUndefined();
    }
    for (const w of ['/', '/app', '/app/x y']) expect(specPathProblem(w, 'workdir'), w).toBeUndefined();
    for (const m of [0, 0o400, 0o644, 0o755, 0o777]) expect(fileModeProblem(m)).toBeUndefined();
    expect(validateService({ name: 'web', image: 'busybox:1.35', configs: [{ name: 'motd', path: '/etc/motd', content: 'hi', mode: 0o444 }] }).ok).toBe(true);
  });

  test('every unclean spelling is named', () => {
    expect(cleanPathProblem('')).toMatch(/empty/);
    expect(cleanPathProblem('/a/./b')).toMatch(/`\.` component/);
    expect(cleanPathProblem('/a/..')).toMatch(/`\.\.` component/);
    expect(cleanPathProblem('/a\nb')).toMatch(/control character/);
    expect(cleanPathProblem(`/${'a'.repeat(256)}`)).toMatch(/limit is 255/);
    expect(specPathProblem('/.cca-tini', 'config')?.code).toBe('CCA-E0326');
    expect(specPathProblem('/dev/null', 'config')?.code).toBe('CCA-E0326');
    expect(specPathProblem('/sys', 'volume')?.code).toBe('CCA-E0326');
    expect(specPathProblem('/my data', 'volume')?.code).toBe('CCA-E0325');
    expect(specPathProblem('/data:rw', 'volume')?.code).toBe('CCA-E0325');
    expect(specPathProblem('/data=x', 'volume')?.code).toBe('CCA-E0325');
    expect(fileModeProblem(0o4755)).toEqual({ bits: 'setuid', suggested: '0755' });
    expect(fileModeProblem(0o7777)).toEqual({ bits: 'setuid and setgid and sticky', suggested: '0777' });
  });
});

describe('the API refuses each escape, dry run or not, and writes nothing', () => {
  for (const e of escapes) {
    test(`${e.title}: ${e.code} from .cca text and from JSON`, async () => {
      const { call, store } = await securedApp();
      const before = await store.revision();
      for (const path of ['/v1/apply?dry_run=1', '/v1/apply']) {
        const res = await call('POST', path, { text: sourceOf(e), token: ADMIN, headers: { 'x-cca-filename': 'evil.cca' } });
        expect(res.status).toBe(400);
        const body = (await res.json()) as { error: { code: string }; diagnostics: { code: string; span?: unknown }[] };
        expect(body.error.code).toBe('CCA-E0612');
        expect(body.diagnostics.find((d) => d.code === e.code)?.span, JSON.stringify(body.diagnostics)).toMatchObject({ file: 'evil.cca', ...expectedSpan(e) });
        const json = await call('POST', path, { json: { services: [{ name: 'web', image: 'busybox:1.35', ...e.json }] }, token: ADMIN });
        expect(json.status).toBe(400);
        const jbody = (await json.json()) as { diagnostics: { code: string }[] };
        expect(jbody.diagnostics.map((d) => d.code)).toContain(e.code);
      }
      expect(await store.revision()).toBe(before);
      expect((await store.range({ prefix: '/services/' })).kvs).toEqual([]);
    });
  }
});

describe('a spec an older server stored under looser rules', () => {
  test('stays readable, so it blocks no other apply; applying it again is refused', async () => {
    const { call, store } = await securedApp();
    // What an older server accepted: any absolute path without NUL, modes up to 07777.
    const old = storedServiceSpecSchema.parse({ name: 'old', image: 'busybox:1.35', configs: [{ name: 'k', path: '/../../root/.ssh/authorized_keys', content: 'x', mode: 0o4755 }] });
    await store.put('/services/old', JSON.stringify(old));
    expect(serviceSpecSchema.safeParse(old).success).toBe(false);
    const web = await call('POST', '/v1/apply', { text: 'service web {\n  image = "busybox:1.35"\n}\n', token: ADMIN });
    expect(web.status).toBe(200);
    expect((await call('GET', '/v1/services', { token: ADMIN })).status).toBe(200);
    const again = await call('POST', '/v1/apply', { json: { services: [old] }, token: ADMIN });
    expect(again.status).toBe(400);
    expect(((await again.json()) as { diagnostics: { code: string }[] }).diagnostics.map((d) => d.code)).toEqual(['CCA-E0324', 'CCA-E0327']);
  });
});

describe('cca apply --dry-run refuses each escape locally, shows where, and sends nothing', () => {
  let cwd = '';
  let live: Live | undefined;
  beforeAll(() => {
    cwd = mkdtempSync(join(tmpdir(), 'cca-escapes-'));
  });
  afterAll(async () => {
    await live?.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  for (const e of escapes) {
    test(`${e.title}: ${e.code}`, async () => {
      live ??= await liveServer();
      const file = `evil-${escapes.indexOf(e)}.cca`;
      writeFileSync(join(cwd, file), sourceOf(e));
      const sent = live.requestIds.length;
      const before = await live.store.revision();
      const r = await live.run(['apply', file, '--dry-run'], { cwd });
      expect(r.code).toBe(1);
      const { line, col } = expectedSpan(e);
      expect(r.stderr).toContain(`error ${e.code}: ${file}:${line}:${col}:`);
      expect(r.stderr).not.toMatch(/\n\s+at .*\.ts:\d+/);
      expect(live.requestIds.length).toBe(sent);
      expect(await live.store.revision()).toBe(before);
      expect((await live.store.range({ prefix: '/services/' })).kvs).toEqual([]);
    });
  }
});
