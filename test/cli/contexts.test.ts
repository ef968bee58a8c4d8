import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { cca, closedUrl } from './harness.js';

/** Distinct URLs nothing listens on: which one a command tried tells where its server came from. */
const [flagUrl, envUrl, ctxA, ctxB, topLevel] = (await Promise.all([1, 2, 3, 4, 5].map(() => closedUrl()))) as [string, string, string, string, string];

function configFile(content?: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'cca-contexts-'));
  const file = join(dir, 'config.json');
  if (content) {
    writeFileSync(file, JSON.stringify(content));
    chmodSync(file, 0o600);
  }
  return file;
}

/** The server a `cca get nodes` tried, read from its E0701. */
async function serverUsed(argv: string[], env: Record<string, string>): Promise<string> {
  const r = await cca(['get', 'nodes', ...argv], { env });
  expect(r.stderr).toContain('CCA-E0701');
  return /could not reach the server at (\S+):/.exec(r.stderr)![1]!;
}

describe('named contexts in the config file', () => {
  test('set-context, use-context, current-context, get-contexts; the file stays 0600 and the old fields stay', async () => {
    const file = configFile({ server: topLevel });
    const env = { CCA_CONFIG: file };
    const dir = join(file, '..');
    writeFileSync(join(dir, 'a.token'), 'cca_admin_aaa\n');
    expect((await cca(['config', 'current-context'], { env })).stdout).toBe("no current context (the config file's top-level server and token, if any, are used)\n");
    const added = await cca(['config', 'set-context', 'a', '--server', ctxA, '--token-file', 'a.token', '--ca', 'ca.pem'], { env, cwd: dir });
    expect(added).toMatchObject({ code: 0, stdout: `context a added in ${file} (\`cca config use-context a\` makes it current)\n` });
    expect((await cca(['config', 'set-context', 'b', '--server', ctxB], { env })).code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ server: topLevel, contexts: { a: { server: ctxA, token: 'cca_admin_aaa', ca: join(dir, 'ca.pem') }, b: { server: ctxB } } });
    expect(await serverUsed([], env)).toBe(topLevel);
    expect(await cca(['config', 'use-context', 'b'], { env })).toMatchObject({ code: 0, stdout: `current context: b (${ctxB})\n` });
    expect((await cca(['config', 'current-context'], { env })).stdout).toBe('b\n');
    const listing = await cca(['config', 'get-contexts'], { env });
    expect(listing.stdout).toMatch(new RegExp(`^CURRENT +NAME +SERVER +TOKEN +CA\\n +a +${ctxA} +yes +${join(dir, 'ca.pem')}\\n\\* +b +${ctxB} +no +-\\n$`));
    expect(listing.stdout).not.toContain('cca_admin_aaa');
    expect(JSON.parse((await cca(['config', 'get-contexts', '-o', 'json'], { env })).stdout)).toEqual({
      currentContext: 'b',
      contexts: [
        { name: 'a', current: false, server: ctxA, token: true, ca: join(dir, 'ca.pem') },
        { name: 'b', current: true, server: ctxB, token: false, ca: null },
      ],
    });
    expect((await cca(['config', 'get-contexts', '-o', 'name'], { env })).stdout).toBe('context/a\ncontext/b\n');
    // Changing one field keeps the others.
    expect((await cca(['config', 'set-context', 'a', '--server', ctxB], { env })).stdout).toMatch(/^context a changed/);
    expect(JSON.parse(readFileSync(file, 'utf8')).contexts.a).toEqual({ server: ctxB, token: 'cca_admin_aaa', ca: join(dir, 'ca.pem') });
  });

  test('precedence: --server > CCA_SERVER > --context > CCA_CONTEXT > current-context > the top-level server', async () => {
    const file = configFile({ server: topLevel, 'current-context': 'a', contexts: { a: { server: ctxA }, b: { server: ctxB } } });
    const env = { CCA_CONFIG: file };
    expect(await serverUsed([], env)).toBe(ctxA);
    expect(await serverUsed([], { ...env, CCA_CONTEXT: 'b' })).toBe(ctxB);
    expect(await serverUsed(['--context', 'a'], { ...env, CCA_CONTEXT: 'b' })).toBe(ctxA);
    expect(await serverUsed(['--context', 'b'], { ...env, CCA_SERVER: envUrl })).toBe(envUrl);
    expect(await serverUsed(['--context', 'b', '--server', flagUrl], { ...env, CCA_SERVER: envUrl })).toBe(flagUrl);
    // Without a current context, the older single-server fields are used.
    const old = configFile({ server: topLevel });
    expect(await serverUsed([], { CCA_CONFIG: old })).toBe(topLevel);
  });

  test('a context the file does not hold is CCA-E0722, naming where it came from; set-context needs a server', async () => {
    const file = configFile({ contexts: { a: { server: ctxA } } });
    const env = { CCA_CONFIG: file };
    const r = await cca(['get', 'nodes', '--context', 'prod'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error CCA-E0722: the context "prod" (from --context) is not in the config file ${file} (its contexts: a)`);
    expect((await cca(['get', 'nodes'], { env: { ...env, CCA_CONTEXT: 'x' } })).stderr).toContain('(from CCA_CONTEXT)');
    expect((await cca(['config', 'use-context', 'prod'], { env })).stderr).toContain('CCA-E0722');
    expect((await cca(['config', 'set-context', 'c'], { env })).stderr).toContain('context "c" needs a server: --server URL');
    expect((await cca(['config', 'frob'], { env })).stderr).toContain('unknown action "frob"');
  });
});
