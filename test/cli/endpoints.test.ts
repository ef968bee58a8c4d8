import { expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { liveServers, type Live } from './harness.js';

const live = liveServers();

test('cca get endpoints SERVICE: a table, JSON, nothing ready yet, an unknown service, no service named', async () => {
  const l = await live();
  await l.store.put(buildKey('service', 'web'), encodeFact('service', serviceSpecSchema.parse({ name: 'web', image: 'busybox:1.35' })));
  const none = await l.run(['get', 'endpoints', 'web']);
  expect(none).toMatchObject({ code: 0, stdout: 'no endpoints\n' });
  await l.store.put(
    buildKey('endpoints', 'web'),
    encodeFact('endpoints', {
      service: 'web',
      endpoints: [
        { replica: 'web-aaaaaaaa', node: 'n1', address: '127.0.1.1', ports: { http: 8080, admin: 9090 } },
        { replica: 'web-bbbbbbbb', node: 'n2', address: '127.0.1.2', ports: { http: 8080, admin: 9090 } },
      ],
      at: 1,
    }),
  );
  const table = await l.run(['get', 'endpoints', 'web']);
  expect(table.code).toBe(0);
  expect(table.stdout.split('\n').map((x) => x.trimEnd())).toEqual([
    'NAME          NODE  ADDRESS    PORTS',
    'web-aaaaaaaa  n1    127.0.1.1  admin=9090,http=8080',
    'web-bbbbbbbb  n2    127.0.1.2  admin=9090,http=8080',
    '',
  ]);
  const json = JSON.parse((await l.run(['get', 'ep', 'web', '-o', 'json'])).stdout) as { kind: string; items: unknown[] };
  expect(json.kind).toBe('endpoints');
  expect(json.items[0]).toEqual({ name: 'web-aaaaaaaa', service: 'web', node: 'n1', address: '127.0.1.1', ports: { http: 8080, admin: 9090 } });
  const unknown = await l.run(['get', 'endpoints', 'nope']);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toContain('CCA-E0609');
  const unnamed = await l.run(['get', 'endpoints']);
  expect(unnamed.code).toBe(1);
  expect(unnamed.stderr).toContain('name the service');
});
