import { join } from 'node:path';
import { startContainerd, type ContainerdDaemon } from '../../agent/containerd/daemon.js';
import type { NetnsManager } from '../../agent/netns.js';
import { ContainerdRuntime, type ContainerdRuntimeOptions } from '../../agent/runtime-containerd.js';
import { buildImages } from '../../fixtures/images/build.js';
import { FakeAgentServer } from './fake-server.js';
import { startAgent, type TestAgent } from './support.js';
import { waitFor } from '../support/wait.js';

export interface ContainerdAgent {
  daemon: ContainerdDaemon;
  runtime: ContainerdRuntime;
  server: FakeAgentServer;
  agent: TestAgent;
}

/** A private containerd under `dir`, the fixture images, and an agent n1 on it, registered with a fake server. */
export async function startContainerdAgent(dir: string, namespace: string, network?: NetnsManager, extra: Pick<ContainerdRuntimeOptions, 'insecureRegistries' | 'pullBackoffMs'> = {}): Promise<ContainerdAgent> {
  buildImages(join(dir, 'images'));
  const daemon = await startContainerd(join(dir, 'containerd'));
  const runtime = new ContainerdRuntime({ address: daemon.address, namespace, root: join(dir, 'state', 'replicas'), imagesDir: join(dir, 'images'), node: 'n1', ...extra, ...(network ? { network } : {}) });
  const server = new FakeAgentServer();
  await server.listen();
  const agent = await startAgent(server, runtime, join(dir, 'state'), { node: 'n1', pollWaitMs: 1_000, ...(network ? { network } : {}) });
  await waitFor('registration', () => server.tenureOf('n1'));
  return { daemon, runtime, server, agent };
}

/** The agent and server closed, every container and the test image removed, containerd stopped. */
export async function stopContainerdAgent(h: Partial<ContainerdAgent>): Promise<void> {
  await h.agent?.agent.close();
  await h.server?.close();
  if (h.runtime) {
    for (const s of await h.runtime.list({ usage: false })) await h.runtime.remove(s.handle);
    await h.runtime.ctr.run(['images', 'rm', 'docker.io/library/busybox:1.35'], { allowFail: true });
    await h.runtime.close();
  }
  await h.daemon?.stop();
}
