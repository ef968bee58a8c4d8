import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { StateDir } from '../../agent/state.js';
import { startServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { adminApi, tempDir } from './support.js';
import { waitFor } from '../support/wait.js';

/**
 * A drain end to end: the real server (API + controllers on a MemoryStore) and four real
 * agents on the fake runtime. The replicas running on the agents' runtimes — the data plane
 * itself — are sampled every 20 ms through the drain: never fewer than desired − max
 * unavailable; afterwards none is left on the drained node and a scale-up avoids it.
 */
describe('drain against the real server and agents', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('moves every replica off the node with never fewer running than the update limits allow', async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    cleanups.push(() => server.stop());
    const runtimes = new Map<string, FakeRuntime>();
    const startAgent = async (node: string, zone: string, cpuMillis: number) => {
      const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:fake' } });
      runtimes.set(node, runtime);
      const tmp = tempDir(`drain-${node}`);
      cleanups.push(tmp.cleanup);
      const agent = new Agent({
        server: server.url, node, token: JOIN, state: new StateDir(join(tmp.dir, 'state')), runtime,
        record: { address: '127.0.0.1', zone, capacity: { cpuMillis, memoryBytes: 4 * 2 ** 30 } },
        pollWaitMs: 2_000, reportEveryMs: 200, log: () => undefined,
      });
      await agent.start();
      cleanups.push(() => agent.close());
      await waitFor(`${node} registered`, () => agent.status().registered, 10_000);
    };
    // n2 and n3 have room for one replica each: the drain's replacement has nowhere to go
    // until n4 joins, and the replica on n1 must keep running meanwhile.
    await startAgent('n1', 'a', 4000);
    await startAgent('n2', 'b', 250);
    await startAgent('n3', 'c', 250);
    const api = adminApi(server.url, ADMIN);
    const spec = (replicas: number) => `service web {\n  image    = "busybox:1.35"\n  command  = ["httpd", "-f"]\n  replicas = ${replicas}\n  cpu      = 0.25\n  memory   = 64Mi\n  update { max_surge = 1 max_unavailable = 0 }\n}\n`;
    await api('POST', '/v1/apply', spec(3));
    const onNode = (node: string) => runtimes.get(node)!.running().length;
    const total = () => [...runtimes.keys()].reduce((n, node) => n + onNode(node), 0);
    await waitFor('three running, one per node', () => total() === 3 && onNode('n1') === 1, { timeoutMs: 20_000, everyMs: 100 });
    await waitFor('three reported running', async () => (await api('GET', '/v1/services/web')).service?.running === 3, { timeoutMs: 20_000, everyMs: 100 });

    let fewest = Infinity;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        fewest = Math.min(fewest, total());
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const r = await api('POST', '/v1/nodes/n1/drain');
    expect(r).toMatchObject({ node: 'n1', cordoned: true, drain: true });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(onNode('n1')).toBe(1); // no replacement could be placed: the old one stays
    await startAgent('n4', 'd', 4000);
    await waitFor('n1 drained', () => onNode('n1') === 0 && total() === 3, { timeoutMs: 30_000, everyMs: 50 });
    sampling = false;
    await sampler;
    expect(fewest).toBeGreaterThanOrEqual(3); // max_unavailable 0: a replacement runs before the old one stops

    await api('POST', '/v1/apply', spec(5));
    await waitFor('five running', () => total() === 5, { timeoutMs: 20_000, everyMs: 100 });
    expect(onNode('n1')).toBe(0); // still cordoned
    expect(onNode('n4')).toBe(3);
    const why = await api('GET', '/v1/why/node/n1');
    expect(JSON.stringify(why)).toContain('drain node n1');
  }, 90_000);
});
