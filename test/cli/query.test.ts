import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { MemoryStore } from '../../db/memory.js';
import { expectGolden } from './golden.js';
import { liveServers, type Live, type RunOptions } from './harness.js';

const open = liveServers();

const observe = (store: MemoryStore, node: string, replica: string, service: string, state: 'running' | 'exited' | 'starting', restarts = 0) =>
  store.put(buildKey('observed', node, replica), encodeFact('observed', { replica, service, node, tenure: 3, state, restarts, health: { liveness: 'passing', readiness: state === 'running' ? 'passing' : 'failing' }, at: 1 }));

const shellWord = (a: string) => (/^[\w.,=/:@%+-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`);

async function setup() {
  const live = await open();
  await observe(live.store, 'n1', 'web-1', 'web', 'running');
  await observe(live.store, 'n1', 'web-2', 'web', 'exited', 4);
  await observe(live.store, 'n2', 'web-3', 'web', 'starting', 1);
  await observe(live.store, 'n2', 'api-1', 'api', 'exited', 2);
  const run = async (name: string | undefined, argv: string[], opts: RunOptions = {}) => {
    const r = await live.run(argv, opts);
    // Shown as typed in a shell (docs/cli.md is made from these), so predicates are quoted.
    if (name) expectGolden(name, argv.map(shellWord), r);
    return r;
  };
  return { live, run };
}

describe('cca query', () => {
  test('predicates and --select, as a table and as JSON', async () => {
    const { run } = await setup();
    const table = await run('query-observed', ['query', 'observed', 'service=web,state!=running', '--select', 'replica,state,health.readiness,restarts']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/web-2 +exited +failing +4/);
    expect(table.stdout).toMatch(/web-3 +starting +failing +1/);
    expect(table.stdout).not.toContain('web-1');
    expect(table.stdout).not.toContain('api-1');
    const json = await run('query-observed-json', ['query', 'observed', 'restarts>1,state in (exited|failed)', '--select', 'replica,restarts', '-o', 'json']);
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout) as { kind: string; items: { key: string; fact: unknown }[]; truncated: boolean };
    expect(out.kind).toBe('observed');
    expect(out.items.map((i) => i.fact)).toEqual([{ replica: 'web-2', restarts: 4 }, { replica: 'api-1', restarts: 2 }]);
    const whole = await run('query-no-predicates', ['query', 'observed', '--limit', '2']);
    expect(whole.stdout.split('\n').filter((l) => l.startsWith('n')).length).toBe(2);
    expect(whole.stdout).toContain('(more match: raise --limit 2)');
  });

  test('bad queries are refused locally with located diagnostics: nothing is sent', async () => {
    const { live, run } = await setup();
    const syntax = await run('query-syntax-error', ['query', 'replicas', 'service=web,state~running']);
    expect(syntax.code).toBe(1);
    expect(syntax.stderr).toContain('CCA-E0014');
    expect(syntax.stderr).toContain('column 18');
    const field = await run('query-unknown-field', ['query', 'replicas', 'service=web,stat=running']);
    expect(field.stderr).toContain('error CCA-E0011: predicate 2 at column 13 (stat=running): replica (/replicas/) facts have no field stat');
    const type = await run('query-wrong-type-json', ['query', 'observed', 'restarts>many', '-o', 'json']);
    expect(JSON.parse(type.stderr).diagnostics[0]).toMatchObject({ code: 'CCA-E0012', params: { at: 'predicate 1 at column 1' } });
    expect((await run('query-unknown-kind', ['query', 'pods'])).stderr).toContain('CCA-E0770');
    expect((await run(undefined, ['query', 'replicas', '--limit', '0'])).stderr).toContain('CCA-E0771');
    expect((await run(undefined, ['query', 'replicas', '--select', 'id,nope'])).stderr).toContain('select[1] "nope"');
    expect(live.requestIds).toEqual([]);
  });

  test('-w follows the kind and shows the matching facts again after a change', async () => {
    const { live } = await setup();
    const stop = new AbortController();
    let wrote = false;
    // A follow that never sees the change ends here, and the expectations below say what was missing.
    const deadline = setTimeout(() => stop.abort(), 10_000);
    const argv = ['query', 'observed', 'state=exited', '--select', 'replica,state', '-w', '-o', 'json'];
    const r = await live.run(argv, {
      signal: stop.signal,
      onWrite: (out) => {
        if (!wrote && out.stdout.includes('api-1')) {
          wrote = true;
          void observe(live.store, 'n2', 'web-3', 'web', 'exited');
        }
        if (out.stdout.trim().split('\n').length >= 2) stop.abort();
      },
    });
    clearTimeout(deadline);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { revision: number; items: { fact: { replica: string } }[] });
    expect(lines.map((l) => l.items.map((i) => i.fact.replica))).toEqual([['web-2', 'api-1'], ['web-2', 'api-1', 'web-3']]);
    expect(lines[1]!.revision).toBeGreaterThan(lines[0]!.revision);
  });
});
