import { describe, expect, test } from 'vitest';
import { buildKey, prefixOf } from '../../core/keys.js';
import { expectGolden } from './golden.js';
import { cca, liveServers, type Live, type Run } from './harness.js';

const open = liveServers();

/** Tokens, ids and times differ per run; the goldens show their shape. */
const stable = (r: Run): Run => {
  const s = (t: string) =>
    t
      .replace(/cca_(\w+?)_[0-9a-f]{12}_[\w-]{43}/g, 'cca_$1_xxxxxxxxxxxx_SECRET')
      // Same widths as what they replace, so tables stay aligned.
      .replace(/\b[0-9a-f]{12}\b/g, 'xxxxxxxxxxxx')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, 'YYYY-MM-DDTHH:MM:SSZ')
      .replace(/revision \d+/g, 'revision N');
  return { ...r, stdout: s(r.stdout), stderr: s(r.stderr) };
};

describe('cca token and cca node reset', () => {
  test('create prints the token once; list never shows it; revoke; a reader token is refused', async () => {
    const live = await open();
    const run = async (name: string, argv: string[]) => {
      const r = await live.run(argv);
      expectGolden(name, argv.map((a) => a.replace(/^[0-9a-f]{12}$/, 'xxxxxxxxxxxx')), stable(r));
      return r;
    };
    const made = await run('token-create', ['token', 'create', '--role', 'join', '--uses', '3', '--expires', '24h', '--name', 'rack-4']);
    expect(made.code).toBe(0);
    const token = /^(cca_join_[0-9a-f]{12}_[\w-]{43})$/m.exec(made.stdout)![1]!;
    const id = token.split('_')[2]!;
    expect((await live.store.get(buildKey('authToken', id)))?.value).not.toContain(token);
    expect((await run('token-create-bad-uses', ['token', 'create', '--role', 'reader', '--uses', '2'])).code).toBe(1);
    const list = await run('token-list', ['token', 'list']);
    expect(list.stdout).not.toContain(token);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+join\\s+rack-4`));
    expect((await run('token-revoke', ['token', 'revoke', id])).code).toBe(0);
    const reader = await live.run(['token', 'create', '--role', 'reader', '-o', 'json']);
    const readerToken = (JSON.parse(reader.stdout) as { token: string }).token;
    const refused = await cca(['token', 'list', '--server', live.url, '--token', readerToken]);
    expectGolden('token-list-reader', ['token', 'list', '--server', 'URL', '--token', 'READER'], stable(refused));
    expect(refused.code).toBe(1);
  });

  test('node reset deletes the credential with a decision; an unknown node is said so', async () => {
    const live = await open();
    const { ensureTokens } = await import('../../handlers/auth.js');
    const { JOIN } = await import('../handlers/harness.js');
    await ensureTokens(live.store, { join: JOIN });
    const enrolled = await fetch(`${live.url}/v1/agent/enroll`, { method: 'POST', headers: { authorization: `Bearer ${JOIN}`, 'content-type': 'application/json' }, body: '{"node":"n1"}' });
    expect(enrolled.status).toBe(200);
    const reset = await live.run(['node', 'reset', 'n1']);
    expectGolden('node-reset', ['node', 'reset', 'n1'], stable(reset));
    expect(reset.code).toBe(0);
    expect(await live.store.get(buildKey('nodeCredential', 'n1'))).toBeNull();
    expect((await live.store.range({ prefix: prefixOf('decision', 'node', 'n1') })).kvs).toHaveLength(1);
    const why = await live.run(['why', 'node', 'n1']);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain('reset the credential of node n1');
    expect(why.stdout).toContain('admin token admin reset the credential');
    const unknown = await live.run(['node', 'reset', 'ghost']);
    expectGolden('node-reset-unknown', ['node', 'reset', 'ghost'], stable(unknown));
    expect(unknown.code).toBe(1);
  });
});
