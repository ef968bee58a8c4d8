import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { expectGolden } from './golden.js';
import { liveServers, seedNode, type Live } from './harness.js';

const open = liveServers();

describe('cca fence node NAME --yes', () => {
  test('refuses without --yes and a terminal, an unknown node, a ready node; fences a lost one with its last tenure', async () => {
    const live = await open();
    const run = async (name: string, argv: string[]) => {
      const r = await live.run(argv);
      expectGolden(name, argv, r);
      return r;
    };
    const tenure = await seedNode(live.store, 'n1', 'a', 2_000, 'ready');
    expect((await run('fence-no-confirm', ['fence', 'node', 'n1'])).code).toBe(1);
    expect(live.requestIds).toEqual([]); // nothing was sent
    expect((await run('fence-unknown', ['fence', 'node', 'ghost', '--confirm'])).code).toBe(1);
    expect((await run('fence-ready', ['fence', 'node', 'n1', '--confirm'])).code).toBe(1);
    expect((await run('fence-bad-kind', ['fence', 'service', 'web', '--confirm'])).code).toBe(1);
    // The lease expires: the registration is gone, the status says lost.
    await live.store.delete(buildKey('node', 'n1'));
    await live.store.put(buildKey('nodeStatus', 'n1'), encodeFact('nodeStatus', { node: 'n1', tenure, state: 'lost', since: 1 }));
    // On a terminal it asks; "no" sends nothing.
    const declined = await live.run(['fence', 'node', 'n1'], { stdinIsTTY: true, answers: ['n'] });
    expect(declined).toMatchObject({ code: 1, stderr: expect.stringContaining('go ahead with fencing node n1 (asserting that none of its workloads runs any more)? [y/N]') });
    expect(declined.stderr).toContain('CCA-E0711');
    expect(await live.store.get(buildKey('fence', 'n1'))).toBeNull();
    expect((await run('fence-confirmed', ['fence', 'node', 'n1', '-y'])).code).toBe(0);
    const kv = await live.store.get(buildKey('fence', 'n1'));
    expect(decodeFact('fence', kv!.key, kv!.value)).toMatchObject({ node: 'n1', tenure, assertedBy: 'admin' });
  });

  test('--confirm, the older spelling, and "yes" on a terminal fence too', async () => {
    const live = await open();
    for (const [name, argv, opts] of [
      ['n2', ['--confirm'], {}],
      ['n3', [], { stdinIsTTY: true, answers: ['yes'] as string[] }],
    ] as const) {
      const tenure = await seedNode(live.store, name, 'a', 2_000, 'ready');
      await live.store.delete(buildKey('node', name));
      await live.store.put(buildKey('nodeStatus', name), encodeFact('nodeStatus', { node: name, tenure, state: 'lost', since: 1 }));
      expect((await live.run(['fence', 'node', name, ...argv], opts)).code).toBe(0);
      expect(await live.store.get(buildKey('fence', name))).not.toBeNull();
    }
  });
});
