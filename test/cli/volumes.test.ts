import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import type { MemoryStore } from '../../db/memory.js';
import { roughBytes } from '../../cli/views.js';
import { expectGolden } from './golden.js';
import { at, liveServers, type Live } from './harness.js';

const open = liveServers();

const MI = 1024 * 1024;
const want = (store: MemoryStore, node: string, service: string, volume: string, sizeBytes: number, usedBy?: string) =>
  store.put(buildKey('volume', node, service, volume), encodeFact('volume', { node, service, volume, sizeBytes, at: at(1), ...(usedBy ? { usedBy, usedAt: at(2) } : {}) }));
const report = (store: MemoryStore, node: string, service: string, volume: string, sizeBytes: number, usedBytes: number, diagnostic?: { code: string; message: string }) =>
  store.put(
    buildKey('observedVolume', node, service, volume),
    encodeFact('observedVolume', { state: 'ready', path: `/var/lib/cca/volumes/${service}/${volume}/data`, sizeBytes, usedBytes, ...(diagnostic ? { diagnostic } : {}), at: at(3) }),
  );

/** db: joined on n1, not yet reported on n2; cache: released, still reported (and over its size). */
async function seedVolumes(store: MemoryStore) {
  for (const name of ['db', 'cache']) await store.put(buildKey('service', name), encodeFact('service', serviceSpecSchema.parse({ name, image: 'busybox:1.35' })));
  await want(store, 'n1', 'db', 'data', 64 * MI, 'db-a1b2c3d4');
  await report(store, 'n1', 'db', 'data', 64 * MI, 3_355_443);
  await want(store, 'n2', 'db', 'data', 64 * MI);
  await report(store, 'n1', 'cache', 'tmp', MI, 2 * MI, { code: 'CCA-E0521', message: 'volume tmp of cache on n1 holds 2Mi, over its size 1Mi' });
}

describe('cca get volumes', () => {
  test('plain, wide, json, --service, an unknown service, a name given', async () => {
    const live = await open();
    const run = async (name: string, argv: string[]) => {
      const r = await live.run(argv);
      expectGolden(name, argv, r);
      return r;
    };
    expect(await live.run(['get', 'volumes'])).toMatchObject({ code: 0, stdout: 'no volumes\n' });
    await seedVolumes(live.store);
    const plain = await run('get-volumes-plain', ['get', 'volumes']);
    expect(plain.code).toBe(0);
    expect(plain.stdout.split('\n').map((l) => l.trimEnd())).toEqual([
      'NODE  SERVICE  VOLUME  SIZE  USED   STATE',
      'n1    cache    tmp     1Mi   2Mi    deleting (CCA-E0521)',
      'n1    db       data    64Mi  3.2Mi  ready',
      'n2    db       data    64Mi  -      not reported',
      '',
    ]);
    expect((await run('get-volumes-wide', ['get', 'vol', '-o', 'wide'])).stdout).toContain('LAST USER');
    const json = await run('get-volumes-json', ['get', 'volume', '--service', 'db', '-o', 'json']);
    const listing = JSON.parse(json.stdout) as { kind: string; revision: number; items: unknown[] };
    expect(listing.kind).toBe('volumes');
    expect(listing.items).toEqual([
      { node: 'n1', service: 'db', volume: 'data', state: 'ready', wanted: true, sizeBytes: 64 * MI, usedBytes: 3_355_443, path: '/var/lib/cca/volumes/db/data/data', lastUser: 'db-a1b2c3d4', deleteAt: null, deletesInMs: null, diagnostic: null },
      { node: 'n2', service: 'db', volume: 'data', state: 'not reported', wanted: true, sizeBytes: 64 * MI, usedBytes: null, path: null, lastUser: null, deleteAt: null, deletesInMs: null, diagnostic: null },
    ]);
    expect((await run('get-volumes-unknown-service', ['get', 'volumes', '--service', 'nope'])).stderr).toContain('CCA-E0609');
    const named = await run('get-volumes-named', ['get', 'volumes', 'db']);
    expect(named.code).toBe(1);
    expect(named.stderr).toContain('--service NAME');
  });

  test('-w redraws when the agent reports the volume', async () => {
    const live = await open();
    await seedVolumes(live.store);
    const stop = new AbortController();
    let reported = false;
    const r = await live.run(['get', 'volumes', '--service', 'db', '-w'], {
      signal: stop.signal,
      onWrite: (out) => {
        if (!reported && out.stdout.includes('not reported')) {
          reported = true;
          void report(live.store, 'n2', 'db', 'data', 64 * MI, 0);
        }
        if (/# revision \d+\n(.*\n)*n2 +db +data +64Mi +0 +ready/.test(out.stdout)) stop.abort();
      },
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/n2 +db +data +64Mi +- +not reported\n\n# revision \d+\n/);
    expect(r.stdout).toMatch(/n2 +db +data +64Mi +0 +ready\n$/);
  });

  test('a released volume: releasing with the time left, kept by `cca volume keep`, released again; delete says which data goes', async () => {
    const live = await open();
    await seedVolumes(live.store);
    // cca delete names the volumes it releases and when their data goes, before it asks.
    const asked = await live.run(['delete', 'service', 'db']);
    expect(asked.code).not.toBe(0);
    expect(asked.stdout).toBe('volume data of db on n1, n2: its data is deleted 1d after (keep_for); `cca volume keep db data` keeps it\n');
    expect(asked.stderr).toContain('and its volumes are released');
    // The storage controller's record of a released volume: its data waits until deleteAt.
    const record = async (node: string, extra: object) => {
      const key = buildKey('volume', node, 'db', 'data');
      const kv = await live.store.get(key);
      await live.store.put(key, encodeFact('volume', { ...JSON.parse(kv!.value), ...extra }));
    };
    await record('n1', { releasing: { since: Date.now(), deleteAt: Date.now() + 3 * 3_600_000, why: 'service-deleted' } });
    const listed = await live.run(['get', 'volumes', '--service', 'db']);
    expect(listed.stdout).toMatch(/n1 +db +data +64Mi +3\.2Mi +releasing \(deleted in 3h\)\n/);
    const kept = await live.run(['volume', 'keep', 'db', 'data', '--node', 'n1']);
    expect(kept).toMatchObject({ code: 0, stdout: expect.stringMatching(/^volume data of db on n1 kept \(its deletion in 3h is cancelled\)\nheld at revision \d+/) });
    expect(await live.store.get(buildKey('volumeHold', 'n1', 'db', 'data'))).not.toBeNull();
    await record('n1', { releasing: undefined, kept: true });
    expect((await live.run(['get', 'volumes', '--service', 'db'])).stdout).toMatch(/n1 +db +data +64Mi +3\.2Mi +kept\n/);
    const released = await live.run(['volume', 'release', 'db', 'data']);
    expect(released).toMatchObject({ code: 0, stdout: expect.stringContaining('hold on volume data of db removed on n1') });
    expect(await live.store.get(buildKey('volumeHold', 'n1', 'db', 'data'))).toBeNull();
    // Nothing to hold or release: coded, with the fix.
    expect((await live.run(['volume', 'keep', 'db', 'nope'])).stderr).toContain('CCA-E0415');
    expect((await live.run(['volume', 'release', 'db', 'data'])).stderr).toContain('CCA-E0415');
    expect((await live.run(['volume', 'shred', 'db', 'data'])).stderr).toContain('CCA-E0703');
  });

  test('used bytes are rounded for people, exact when a unit divides them', () => {
    expect([0, 1000, 1024, 1536, 3_355_443, 64 * MI, 1024 * 1024 - 1, 5 * 1024 ** 3 + 1].map(roughBytes)).toEqual(['0', '1000', '1Ki', '1.5Ki', '3.2Mi', '64Mi', '1Mi', '5Gi']);
  });
});
