import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type AgentOptions } from '../../agent/agent.js';
import type { Runtime } from '../../agent/runtime.js';
import { StateDir } from '../../agent/state.js';
import type { FakeAgentServer } from './fake-server.js';

export async function waitFor<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

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
