import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type AgentOptions } from '../../agent/agent.js';
import type { Runtime } from '../../agent/runtime.js';
import { StateDir } from '../../agent/state.js';
import type { FakeAgentServer } from './fake-server.js';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `cca-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface TestAgent {
  agent: Agent;
  logs: string[];
}

export async function startAgent(server: FakeAgentServer, runtime: Runtime, stateDir: string, over: Partial<AgentOptions> = {}): Promise<TestAgent> {
  const logs: string[] = [];
  const agent = new Agent({
    server: server.url,
    node: 'n1',
    token: server.joinToken,
    state: new StateDir(stateDir),
    runtime,
    record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
    leaseTtlSeconds: 10,
    pollWaitMs: 2_000,
    reportEveryMs: 1_000,
    log: (l) => logs.push(l),
    ...over,
  });
  await agent.start();
  return { agent, logs };
}

/**
 * Workloads outlive their agent by design: end any left under a replicas directory (each
 * workload's process group, then its supervisor) by the pids the process runtime recorded.
 */
export function killLeftoverWorkloads(replicasDir: string): void {
  for (const r of existsSync(replicasDir) ? readdirSync(replicasDir) : []) {
    if (r.startsWith('.')) continue;
    for (const [file, group] of [['workload.pid', true], ['supervisor.pid', false]] as const) {
      try {
        const pid = Number(readFileSync(join(replicasDir, r, file), 'utf8').split(' ')[0]);
        process.kill(group ? -pid : pid, 'SIGKILL');
      } catch {
        // not there or gone
      }
    }
  }
}

/** An API answer, read field by field in a test. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- API answers are checked loosely in tests
export type Json = Record<string, any>;

/** The admin's view of a server's API: a JSON body, or `.cca` text when given a string. */
export function adminApi(url: string, token: string): (method: string, path: string, body?: string) => Promise<Json> {
  return async (method, path, body) => {
    const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'text/x-cca' } : {}) }, ...(body ? { body } : {}) });
    return (await r.json()) as Json;
  };
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
