import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Agent, FENCE } from './agent.js';
import { Ctr } from './containerd/ctr.js';
import { startContainerd } from './containerd/daemon.js';
import { readCatalogue } from './images.js';
import { parseAgentFlags, USAGE, type AgentFlags } from './options.js';
import type { Runtime } from './runtime.js';
import { ContainerdRuntime } from './runtime-containerd.js';
import { FakeRuntime } from './runtime-fake.js';
import { ProcessRuntime } from './runtime-process.js';
import { StateDir } from './state.js';
import { fetchTrusting } from './https.js';
import { defaultPrefix, NetnsManager } from './netns.js';
import { exitCodeForBlame, toDiagnostic } from '../core/diagnostics/index.js';
import { logSettings } from '../core/log-settings.js';
import { createAgentLogger } from './log.js';
import { agentRegistry, parseListen, serveMetrics } from './metrics.js';

async function containerdAddress(flags: AgentFlags): Promise<string> {
  if (!flags.containerdStart) return flags.containerdAddress;
  const dir = join(resolve(flags.stateDir), 'containerd');
  const sock = join(dir, 'containerd.sock');
  // A containerd this agent started before (it outlives the agent, as the shims do): reuse it.
  if (existsSync(sock) && (await new Ctr(sock, 'default').run(['version'], { allowFail: true, timeoutMs: 3_000 })).code === 0) return sock;
  return (await startContainerd(dir)).address;
}

/**
 * What a process-runtime node offers beyond its own images (the toolbox, and busybox where
 * the host has it): the built image catalogue, so the same specs run on both runtimes.
 */
function processCatalogue(flags: AgentFlags): Record<string, string> {
  const built = readCatalogue(resolve(flags.imagesDir));
  return Object.fromEntries(Object.entries(built).map(([k, v]) => [k, v.digest]));
}

/** Network isolation (process or containerd runtime): the tools checked up front (CCA-E0525), not at the first replica. */
async function makeNetwork(flags: AgentFlags, state: StateDir): Promise<NetnsManager | undefined> {
  if (flags.network !== 'netns') return undefined;
  const net = new NetnsManager({ prefix: flags.networkPrefix || defaultPrefix(flags.node), cidr: flags.networkCidr, dir: join(state.dir, 'network') });
  await net.checkTools();
  return net;
}

async function makeRuntime(flags: AgentFlags, state: StateDir, network?: NetnsManager): Promise<Runtime> {
  if (flags.runtime === 'fake') {
    const catalogue = readCatalogue(resolve(flags.imagesDir));
    return new FakeRuntime(Object.keys(catalogue).length > 0 ? { catalogue: Object.fromEntries(Object.entries(catalogue).map(([k, v]) => [k, v.digest])) } : {});
  }
  if (flags.runtime === 'process') {
    return new ProcessRuntime({ root: state.replicas, fenceFile: state.fenceFile, fenceKillMs: FENCE.killMs, catalogue: processCatalogue(flags), logMaxBytes: flags.logMaxBytes, logFiles: flags.logFiles, ...(network ? { network } : {}) });
  }
  return new ContainerdRuntime({
    address: await containerdAddress(flags),
    namespace: flags.namespace,
    root: state.replicas,
    imagesDir: resolve(flags.imagesDir),
    tini: flags.tini,
    node: flags.node,
    insecureRegistries: flags.insecureRegistries,
    fence: { file: state.fenceFile, killMs: FENCE.killMs, pidFile: join(state.dir, 'fencer.pid') },
    logMaxBytes: flags.logMaxBytes,
    logFiles: flags.logFiles,
    ...(network ? { network } : {}),
  });
}

/**
 * `cca agent` and agent/main.ts: run the node agent until SIGTERM/SIGINT. Stopping the agent never stops the
 * workloads (they keep running under their supervisors; a restarted agent re-adopts them).
 */
export async function runAgent(argv: string[]): Promise<number> {
  let agent: Agent | undefined;
  try {
    const flags = parseAgentFlags(argv);
    if (flags.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    const log = createAgentLogger(logSettings({ level: flags.logLevel || undefined, format: flags.logFormat || undefined }, process.stderr.isTTY === true), flags.node);
    if (flags.metricsListen) parseListen(flags.metricsListen); // a bad address fails before anything starts
    const state = new StateDir(resolve(flags.stateDir));
    const network = await makeNetwork(flags, state);
    const runtime = await makeRuntime(flags, state, network);
    agent = new Agent({
      server: flags.server,
      node: flags.node,
      token: flags.token,
      state,
      runtime,
      record: { address: flags.address, zone: flags.zone, labels: flags.labels, taints: flags.taints, capacity: { cpuMillis: flags.cpuMillis, memoryBytes: flags.memoryBytes, replicas: flags.maxReplicas } },
      leaseTtlSeconds: flags.leaseTtlSeconds,
      diskMinFreeBytes: flags.diskMinFree,
      logMaxTotalBytes: flags.logMaxTotal,
      peer: { listen: flags.peerListen, advertise: flags.peerAdvertise, networks: flags.peerNetworks },
      ...(network ? { network } : {}),
      ...(flags.ca ? { fetch: fetchTrusting(flags.ca) } : {}),
      log: (line) => log.info(line),
    });
    await agent.start();
    const running = agent;
    const metrics = flags.metricsListen ? await serveMetrics(agentRegistry(() => running.vitals()), flags.metricsListen) : undefined;
    if (metrics) log.info({ url: metrics.url }, `metrics on ${metrics.url}`);
    log.info({ runtime: flags.runtime, stateDir: state.dir, cpuMillis: flags.cpuMillis, memoryBytes: flags.memoryBytes }, `running (${flags.runtime} runtime, state ${state.dir}; declares ${flags.cpuMillis}m cpu, ${flags.memoryBytes} bytes of memory)`);
    const signal = await new Promise<NodeJS.Signals>((done) => {
      process.once('SIGTERM', () => done('SIGTERM'));
      process.once('SIGINT', () => done('SIGINT'));
    });
    log.info(`${signal}, leaving workloads running`);
    await metrics?.close();
    await agent.close();
    await runtime.close();
    return 0;
  } catch (e) {
    const d = toDiagnostic(e, 'the agent');
    process.stderr.write(`${d.code} ${d.message}\n  fix: ${d.fix}\n`);
    await agent?.close();
    return exitCodeForBlame[d.blame];
  }
}
