/**
 * Server pods as real processes (`server/main.ts`) for the multi-pod tests: start one on a
 * store URL, talk to its API, and check that a set of 3-replica services converged with no
 * duplicate and allocations matching assignments.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { freePort } from './postgres-server.js';
import { waitFor } from './wait.js';
import { nodeEntry } from '../../agent/node-entry.js';

export interface Pod {
  name: string;
  url: string;
  child: ChildProcess;
  /** Everything the pod printed so far. */
  output(): string;
  /** What it printed on stdout alone (its log: JSON lines when not on a terminal). */
  stdout(): string;
}

/** Start a pod (2 workers) and wait until /readyz answers; it is SIGKILLed by the cleanup pushed onto `cleanups`. */
export async function startPod(name: string, store: string, cleanups: (() => Promise<void>)[], extraArgs: string[] = []): Promise<Pod> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeEntry(import.meta.url, '../../server/main'), '--store', store, '--port', String(port), '--workers', '2', ...extraArgs], {
    env: { ...process.env, CCA_ADMIN_TOKEN: ADMIN, CCA_JOIN_TOKEN: JOIN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  child.stdout!.on('data', (d) => {
    out += d;
    stdout += d;
  });
  child.stderr!.on('data', (d) => (out += d));
  cleanups.push(async () => void child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`pod ${name} to be ready`, () => fetch(`${url}/readyz`).then((r) => r.ok), { timeoutMs: 30_000, retryErrors: true }).catch((e: Error) => {
    throw new Error(`${e.message}\npod ${name} printed:\n${out}`);
  });
  return { name, url, child, output: () => out, stdout: () => stdout };
}

export async function podApi(pod: Pod, method: string, path: string, body?: string): Promise<Record<string, any>> {
  const r = await fetch(`${pod.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'text/x-cca' } : {}) },
    ...(body ? { body } : {}),
  });
  return (await r.json()) as Record<string, any>;
}

/** Service `s<i>`: 3 replicas of 0.1 CPU. */
export const service = (i: number) => `service s${i} {\n  image = "busybox:1.35"\n  replicas = 3\n  cpu = 0.1\n  memory = 16Mi\n}\n`;

/**
 * Services s0..s<n-1> all run 3 replicas, read through `pod`: no replica id twice, and each
 * node's allocation is its replicas' requests (what the auditor would check). Returns the
 * number of assignments the nodes report.
 */
export async function expectConverged(pod: Pod, n: number): Promise<number> {
  const all = await waitFor(
    `${n} services at 3 running each`,
    () => podApi(pod, 'GET', '/v1/services'),
    (r) => r.services?.length === n && r.services.every((s: { running: number }) => s.running === 3),
    45_000,
  );
  expect(all.services.map((s: { name: string; running: number }) => [s.name, s.running]).sort()).toEqual(Array.from({ length: n }, (_, i) => [`s${i}`, 3]).sort());
  const replicas = (await podApi(pod, 'GET', '/v1/replicas')).replicas as { id: string; state: string }[];
  const live = replicas.filter((r) => r.state === 'running');
  expect(new Set(live.map((r) => r.id)).size).toBe(live.length);
  expect(live.length).toBe(3 * n);
  const nodes = (await podApi(pod, 'GET', '/v1/nodes')).nodes as { name: string; replicas: number; used: { cpuMillis: number } }[];
  for (const node of nodes) expect(node.used.cpuMillis).toBe(node.replicas * 100);
  return nodes.reduce((s, node) => s + node.replicas, 0);
}
