import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContainerdDaemon } from '../../agent/containerd/daemon.js';
import { NetnsManager } from '../../agent/netns.js';
import { renderPolicy } from '../../agent/nft.js';
import type { ContainerdRuntime } from '../../agent/runtime-containerd.js';
import { startContainerdAgent, stopContainerdAgent } from './containerd-harness.js';
import type { FakeAgentServer } from './fake-server.js';
import { namespacesWith, probe } from './netns-support.js';
import { tempDir, type TestAgent } from './support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';

/** The containerd runtime with `--network netns`: containers join the namespace the agent made (`ctr run --with-ns`). */
const can = needs('containerd') && needs('netns');
const prefix = `tc${(process.pid % 36 ** 4).toString(36)}`;
const cidr = `10.234.${process.pid % 250}.0/24`;

describe.runIf(can)('containerd runtime in network namespaces', () => {
  const tmp = tempDir('ctd-net');
  const namespace = `cca-net-${process.pid}`;
  const net = new NetnsManager({ prefix, cidr, dir: join(tmp.dir, 'state', 'network') });
  let daemon: ContainerdDaemon;
  let runtime: ContainerdRuntime;
  let server: FakeAgentServer;
  let agent: TestAgent;

  beforeAll(async () => {
    ({ daemon, runtime, server, agent } = await startContainerdAgent(tmp.dir, namespace, net));
  }, 60_000);

  afterAll(async () => {
    await stopContainerdAgent({ daemon, runtime, server, agent });
    for (const n of net.all()) await net.teardown(n.replica);
    try {
      execFileSync('ip', ['link', 'del', net.bridge], { stdio: 'ignore' });
    } catch {
      // already gone
    }
    tmp.cleanup();
  }, 60_000);

  it('a container gets its own address, starts denied to all but the node, and obeys the rules applied to its namespace', async () => {
    server.assign('n1', 'db-1', {
      name: 'db',
      image: 'busybox:1.35',
      command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
      ports: [{ name: 'http', container: 8080 }],
      health: { readiness: { probe: { type: 'tcp', port: 'http' }, intervalMs: 300, timeoutMs: 200 } },
      network: { allow: [{ service: 'api', port: 'http' }] },
    });
    // Readiness passes: the agent probes the replica's own address, and the node is always admitted.
    const obs = await waitFor('db ready', () => (server.observation('n1', 'db-1')?.health.readiness === 'passing' ? server.observation('n1', 'db-1') : undefined), { timeoutMs: 40_000, everyMs: 100 });
    const db = net.info('db-1')!;
    expect(obs.address).toBe(db.address);
    expect(obs.ports).toEqual({ http: 8080 });
    expect(await probe(undefined, db.address, 8080)).toBe(true);
    // Clients: two more namespaces of this node's network.
    const api = await net.setup('api-9', { network: { allow: [] }, ports: [] });
    const other = await net.setup('other-9', { network: { allow: [] }, ports: [] });
    expect(await probe(net.netnsPath('api-9'), db.address, 8080)).toBe(false);
    await net.apply('db-1', renderPolicy({ policy: 'allow', rules: [{ port: 8080, protocol: 'tcp', services: ['api'], from: [api.address] }] }, net.gateway));
    expect(await probe(net.netnsPath('api-9'), db.address, 8080)).toBe(true);
    expect(await probe(net.netnsPath('other-9'), db.address, 8080)).toBe(false);
    const pid = (await runtime.ctr.tasks()).get('cca-db-1')?.pid;
    await net.apply('db-1', renderPolicy({ policy: 'allow', rules: [{ port: 8080, protocol: 'tcp', services: ['api', 'other'], from: [api.address, other.address] }] }, net.gateway));
    expect(await probe(net.netnsPath('other-9'), db.address, 8080)).toBe(true);
    expect((await runtime.ctr.tasks()).get('cca-db-1')?.pid).toBe(pid);
    await net.teardown('api-9');
    await net.teardown('other-9');
    // Removal takes the namespace with it.
    server.unassign('n1', 'db-1');
    await waitFor('removed with its namespace', async () => !(await runtime.ctr.containers()).has('cca-db-1') && namespacesWith(prefix).length === 0, { timeoutMs: 20_000, everyMs: 100 });
  }, 90_000);
});
