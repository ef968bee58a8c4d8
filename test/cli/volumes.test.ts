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
      'n1    cache    tmp     1Mi   2Mi    releasing (CCA-E0521)',
      'n1    db       data    64Mi  3.2Mi  ready',
      'n2    db       data    64Mi  -      not reported',
      '',
    ]);
    expect((await run('get-volumes-wide', ['get', 'vol', '-o', 'wide'])).stdout).toContain('LAST USER');
    const json = await run('get-volumes-json', ['get', 'volume', '--service', 'db', '-o', 'json']);
    const listing = JSON.parse(json.stdout) as { kind: string; revision: number; items: unknown[] };
    expect(listing.kind).toBe('volumes');
    expect(listing.items).toEqual([
      { node: 'n1', service: 'db', volume: 'data', state: 'ready', wanted: true, sizeBytes: 64 * MI, usedBytes: 3_355_443, path: '/var/lib/cca/volumes/db/data/data', lastUser: 'db-a1b2c3d4', diagnostic: null },
      { node: 'n2', service: 'db', volume: 'data', state: 'not reported', wanted: true, sizeBytes: 64 * MI, usedBytes: null, path: null, lastUser: null, diagnostic: null },
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

  test('used bytes are rounded for people, exact when a unit divides them', () => {
    expect([0, 1000, 1024, 1536, 3_355_443, 64 * MI, 1024 * 1024 - 1, 5 * 1024 ** 3 + 1].map(roughBytes)).toEqual(['0', '1000', '1Ki', '1.5Ki', '3.2Mi', '64Mi', '1Mi', '5Gi']);
  });
});
