/**
 * A load-generator process for bench:server, bench:soak, bench:system and bench:apply-latency: real `Agent`s (agent/agent.ts)
 * on the fake runtime, as many as its settings say, each talking HTTP to the pod exactly as
 * a separate `cca agent` would, started a batch at a time. Messages: `ready` once all are
 * started (with how many registered), `vitals` every 2 s (`HostVitals`: agents fenced now
 * and ever, the longest time since a successful keepalive), `stopped` at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Agent } from '../../agent/agent.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { StateDir } from '../../agent/state.js';
import { WORKER_CONFIG } from './workers.js';

const config = z
  .strictObject({
    server: z.string().url(),
    join: z.string().min(1),
    nodes: z.array(z.string().min(1)).min(1),
    zones: z.array(z.string().min(1)).min(1),
    cpuMillis: z.number().int().positive(),
    memoryBytes: z.number().int().positive(),
    /** Agents started at once (registration is the pod's heaviest agent request). */
    startBatch: z.number().int().positive().default(10),
    /** How long a batch may take to register before the next starts anyway. */
    registerWithinMs: z.number().int().positive().default(60_000),
  })
  .parse(JSON.parse(process.env[WORKER_CONFIG] ?? 'null'));

// The parent may be gone (killed, or it stopped first): a message then has nowhere to go.
const send = (m: object) => {
  if (process.connected) process.send?.(m);
};
const dir = mkdtempSync(path.join(os.tmpdir(), 'cca-bench-agents-'));
const agents: Agent[] = [];
let stopping = false;

/**
 * What a run's agents went through, so a bench can tell a slow control plane from one its
 * agents gave up on: an agent that fenced stopped its workloads (docs/fencing.md).
 */
export interface HostVitals {
  type: 'vitals';
  agents: number;
  /** Agents fenced now that held a lease before (a new agent is fenced until it registers). */
  fencedNow: number;
  /** Agents that have fenced at least once since they first held a lease. */
  fencedEver: number;
  /** The longest time since any agent's last successful keepalive was sent (ms; 0 with none registered). */
  longestSinceKeepaliveMs: number;
  /** The largest `longestSinceKeepaliveMs` of every report so far (sampled every 2 s). */
  worstSinceKeepaliveMs: number;
  /** Questions its agents sent their peers so far (docs/fencing.md): a storm of them starves a host. */
  peerQuestions: number;
}
// An agent is fenced from its start until it first registers: only a fence after it ran counts.
const ran = new Set<Agent>();
const everFenced = new Set<Agent>();
let worst = 0;
const vitals = setInterval(() => {
  let fencedNow = 0;
  let longest = 0;
  let peerQuestions = 0;
  for (const a of agents) {
    const v = a.vitals();
    peerQuestions += v.peerQuestions;
    if (!v.fenced && a.status().registered) ran.add(a);
    if (v.fenced && ran.has(a)) {
      fencedNow++;
      everFenced.add(a);
    }
    if (Number.isFinite(v.sinceKeepaliveMs)) longest = Math.max(longest, v.sinceKeepaliveMs);
  }
  worst = Math.max(worst, Math.round(longest));
  send({ type: 'vitals', agents: agents.length, fencedNow, fencedEver: everFenced.size, longestSinceKeepaliveMs: Math.round(longest), worstSinceKeepaliveMs: worst, peerQuestions } satisfies HostVitals);
}, 2_000);
vitals.unref();

async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(vitals);
  // Bounded: the state directory goes even when an agent is slow to close.
  await Promise.race([Promise.allSettled(agents.map((a) => a.close())), new Promise((r) => setTimeout(r, 4_000))]);
  rmSync(dir, { recursive: true, force: true });
  send({ type: 'stopped' });
  process.disconnect?.();
  process.exit(0);
}
process.on('message', (m) => {
  if ((m as { type?: string }).type === 'stop') void stop();
});
process.on('SIGTERM', () => void stop());
// The parent went away without a word: do not outlive it.
process.on('disconnect', () => void stop());

/** Until each agent of a batch has registered (or `ms` passed): an enrollment is not retried by the pod, so do not pile them up. */
async function registered(batch: Agent[], ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (!stopping && performance.now() < until && batch.some((a) => !a.status().registered)) await new Promise((r) => setTimeout(r, 200));
}

for (let i = 0; i < config.nodes.length; i += config.startBatch) {
  const batch = config.nodes.slice(i, i + config.startBatch).map((node, j) => {
    const agent = new Agent({
      server: config.server,
      node,
      token: config.join,
      state: new StateDir(path.join(dir, node)),
      runtime: new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:fake' } }),
      record: { address: '127.0.0.1', zone: config.zones[(i + j) % config.zones.length]!, capacity: { cpuMillis: config.cpuMillis, memoryBytes: config.memoryBytes } },
      log: () => undefined,
    });
    agents.push(agent);
    return agent;
  });
  await Promise.all(batch.map((a) => a.start()));
  await registered(batch, config.registerWithinMs);
  if (stopping) break;
}
send({ type: 'ready', agents: agents.length, registered: agents.filter((a) => a.status().registered).length });
