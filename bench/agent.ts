/**
 * npm run bench:agent — 20 replicas on one node through the real containerd runtime: from the
 * assignments appearing to all 20 observed running (a private containerd, the agent in-process,
 * an in-process stand-in for the agent API). The last line is JSON.
 *
 *   npx tsx bench/agent.ts [--replicas 20]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../agent/agent.js';
import { startContainerd } from '../agent/containerd/daemon.js';
import { ContainerdRuntime } from '../agent/runtime-containerd.js';
import { StateDir } from '../agent/state.js';
import { buildImages } from '../fixtures/images/build.js';
import { FakeAgentServer } from '../test/agent/fake-server.js';

const i = process.argv.indexOf('--replicas');
const replicas = i >= 0 ? Number(process.argv[i + 1]) : 20;
const dir = mkdtempSync(join(tmpdir(), 'cca-bench-agent-'));
const namespace = `cca-bench-${process.pid}`;
const daemon = await startContainerd(join(dir, 'containerd'));
const runtime = new ContainerdRuntime({ address: daemon.address, namespace, root: join(dir, 'state', 'replicas'), imagesDir: join(dir, 'images') });
const server = new FakeAgentServer();
let agent: Agent | undefined;
const log = (l: string) => process.stderr.write(`${l}\n`);
try {
  buildImages(join(dir, 'images'));
  // Import ahead, as a node that has run the image before would have it.
  await runtime.ctr.run(['images', 'import', '--base-name', 'docker.io/library/busybox', join(dir, 'images', 'busybox-1.35.oci.tar')]);
  await server.listen();
  agent = new Agent({
    server: server.url,
    node: 'bench',
    token: server.joinToken,
    state: new StateDir(join(dir, 'state')),
    runtime,
    record: { address: '127.0.0.1', capacity: { cpuMillis: 64_000, memoryBytes: 64 * 2 ** 30 } },
    pollWaitMs: 5_000,
    reportEveryMs: 5_000,
    log: () => undefined,
  });
  await agent.start();
  while (server.tenureOf('bench') === undefined) await new Promise((r) => setTimeout(r, 20));
  const t0 = performance.now();
  for (let n = 0; n < replicas; n++) {
    server.assign('bench', `web-${n}`, { name: 'web', image: 'busybox:1.35', command: ['httpd', '-f', '-p', `127.0.0.1:${21_000 + n}`, '-h', '/www'], resources: { cpuMillis: 100, memoryBytes: 32 * 2 ** 20 } });
  }
  const running = () => [...Array(replicas).keys()].filter((n) => server.observation('bench', `web-${n}`)?.state === 'running').length;
  while (running() < replicas) {
    if (performance.now() - t0 > 120_000) throw new Error(`only ${running()}/${replicas} running after 120 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const seconds = (performance.now() - t0) / 1000;
  log(`${replicas} replicas: assignment → all running in ${seconds.toFixed(2)} s (${((seconds * 1000) / replicas).toFixed(0)} ms per replica)`);
  process.stdout.write(`${JSON.stringify({ bench: 'agent', runtime: 'containerd', replicas, seconds: Number(seconds.toFixed(3)), msPerReplica: Math.round((seconds * 1000) / replicas) })}\n`);
} finally {
  await agent?.close();
  for (const s of await runtime.list({ usage: false })) await runtime.remove(s.handle);
  await runtime.ctr.run(['images', 'rm', 'docker.io/library/busybox:1.35'], { allowFail: true });
  await runtime.close();
  await server.close();
  await daemon.stop();
  rmSync(dir, { recursive: true, force: true });
}
