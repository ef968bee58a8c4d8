import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { expectGolden } from './golden.js';
import { liveServers, seedNode, seedReplica, type Live } from './harness.js';

const open = liveServers();

/** `cca get services` against a live server holding an autoscaled service, its intent and usage reports. */
test('cca get services shows the autoscaled count, its bounds and the utilisation against the target', async () => {
  const live = await open();
  const cwd = mkdtempSync(join(tmpdir(), 'cca-live-'));
  copyFileSync(join('test/cli/files', 'web.cca'), join(cwd, 'web.cca'));
  writeFileSync(join(cwd, 'burn.cca'), 'service burn {\n  image = "busybox:1.35"\n  cpu   = 250m\n  autoscale { min = 1 max = 3 target_cpu = 50% }\n}\n');
  expect((await live.run(['apply', 'web.cca', 'burn.cca', '--yes'], { cwd })).code).toBe(0);
  const t1 = await seedNode(live.store, 'n1', 'a', 4000);
  await seedReplica(live.store, { service: 'web', id: 'web-a1', node: 'n1', tenure: t1, state: 'running', ready: true });
  await seedReplica(live.store, { service: 'web', id: 'web-b2', node: 'n1', tenure: t1, state: 'running', ready: true });
  // Three burn replicas reporting 180m, 200m and 160m of their 250m requests: 72% mean.
  for (const [id, used] of [['burn-a1', 180], ['burn-b2', 200], ['burn-c3', 160]] as const) {
    await seedReplica(live.store, { service: 'burn', id, node: 'n1', tenure: t1, state: 'running', ready: true });
    const key = buildKey('observed', 'n1', id);
    const obs = JSON.parse((await live.store.get(key))!.value) as Record<string, unknown>;
    await live.store.put(key, JSON.stringify({ ...obs, usage: { cpuMillis: used, memoryBytes: 1 << 20 } }));
  }
  await live.store.put(buildKey('autoscale', 'burn'), encodeFact('autoscale', { service: 'burn', desired: 3, observedCpuPercent: 72, stableSince: 1, at: 1, recommendations: [{ at: 1, desired: 3 }] }));
  const plain = await live.run(['get', 'services'], { cwd });
  expectGolden('get-services-autoscaled', ['get', 'services'], plain);
  expect(plain.stdout).toContain('3 (autoscaled 1–3, cpu 72%/50%)');
  const json = JSON.parse((await live.run(['get', 'services', '-o', 'json'], { cwd })).stdout) as { items: { name: string; autoscale?: unknown }[] };
  expect(json.items.find((i) => i.name === 'burn')?.autoscale).toEqual({ min: 1, max: 3, targetCpuPercent: 50, cpuPercent: 72 });
  expect(json.items.find((i) => i.name === 'web')).not.toHaveProperty('autoscale');
});
