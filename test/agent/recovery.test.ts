import * as fs from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { StateDir, type StateIo } from '../../agent/state.js';
import { FakeAgentServer } from './fake-server.js';
import { sleep, startAgent, tempDir, type TestAgent } from './support.js';
import { waitFor } from '../support/wait.js';

/**
 * The real agent (fake runtime, fake server) through the outages of its own state
 * (docs/agent.md, "Recovery"): a cached desired state it cannot use never stops a running
 * workload; a state directory that cannot be written never crashes it from a timer.
 */
const web = { name: 'web', image: 'busybox:1.35', command: ['httpd', '-f'], stopGraceMs: 500 };

describe('agent: outages of its own state', () => {
  let server: FakeAgentServer;
  let state: { dir: string; cleanup: () => void };
  let runtime: FakeRuntime;
  const agents: TestAgent[] = [];

  beforeEach(async () => {
    server = new FakeAgentServer();
    await server.listen();
    state = tempDir('agent-recovery');
    runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb' } });
  });

  afterEach(async () => {
    for (const a of agents.splice(0)) await a.agent.close();
    await server.close();
    await runtime.close();
    state.cleanup();
  });

  const start = async (over = {}) => {
    const a = await startAgent(server, runtime, state.dir, over);
    agents.push(a);
    return a;
  };
  const stop = async (a: TestAgent) => {
    await a.agent.close();
    agents.splice(agents.indexOf(a), 1);
  };

  for (const [what, content] of [
    ['corrupt', '{"format":1,"revision":12,"assignments":[{"replica":"web-1","serv'],
    ['zero bytes', ''],
    ['wrong JSON', '["web-1"]'],
    ['from a newer agent', '{"format":2,"revision":12,"replicas":{"web-1":{}}}'],
  ] as const) {
    it(`restarted with a ${what} desired.json while the server is down: keeps what runs, reports it, waits for the server`, async () => {
      const first = await start();
      await waitFor('registration', () => server.tenureOf('n1'));
      server.assign('n1', 'web-1', web);
      server.assign('n1', 'web-2', web);
      await waitFor('both running', () => server.observation('n1', 'web-1')?.state === 'running' && server.observation('n1', 'web-2')?.state === 'running');
      await stop(first);
      server.cut(true);
      fs.writeFileSync(join(state.dir, 'desired.json'), content);
      const second = await start();
      // Several reconciles (one a second, and on every change): nothing is stopped.
      await sleep(2_500);
      expect(runtime.running().sort()).toEqual(['web-1', 'web-2']);
      expect(second.agent.status().fenced).toBe(false);
      const line = second.logs.find((l) => /^CCA-E059[23] /.test(l));
      expect(line).toContain(join(state.dir, 'desired.json'));
      expect(line).toContain('fix: ');
      const kept = fs.readdirSync(state.dir).filter((f) => f.startsWith('desired.json.bad-'));
      expect(kept).toHaveLength(1);
      expect(fs.readFileSync(join(state.dir, kept[0]!), 'utf8')).toBe(content);
      // The server answers: what it still assigns keeps running, what it no longer does stops.
      server.unassign('n1', 'web-2');
      server.cut(false);
      await waitFor('web-2 stopped once the server said so', () => !runtime.running().includes('web-2'), 15_000);
      expect(runtime.running()).toEqual(['web-1']);
      expect(JSON.parse(fs.readFileSync(join(state.dir, 'desired.json'), 'utf8'))).toMatchObject({ format: 1 });
      // Reported to the server as well as logged.
      await waitFor('reported', () => server.events.some((e) => e.kind === 'state-problem' && /^CCA-E059[23]/.test(e.message)), 10_000);
    }, 40_000);
  }

  it('restarted with a cached desired state and no server, the fence still stops what it keeps', async () => {
    const first = await start({ leaseTtlSeconds: 5 });
    await waitFor('registration', () => server.tenureOf('n1'));
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    await stop(first);
    server.cut(true);
    fs.writeFileSync(join(state.dir, 'desired.json'), '');
    const second = await start({ leaseTtlSeconds: 5 });
    await waitFor('fenced', () => second.agent.status().fenced, 10_000);
    await waitFor('stopped by the fence', () => runtime.running().length === 0, 10_000);
  }, 30_000);

  it('state writes failing (ENOSPC) never crash the agent from a timer: coded, reported once per file, and it carries on', async () => {
    let failing = false;
    const io: StateIo = {
      ...fs,
      writeFileSync: ((...args: Parameters<typeof fs.writeFileSync>) => {
        if (failing) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        return fs.writeFileSync(...args);
      }) as typeof fs.writeFileSync,
    };
    const a = await start({ state: new StateDir(state.dir, io), leaseTtlSeconds: 5 });
    await waitFor('registration', () => server.tenureOf('n1'));
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    failing = true;
    // The assignments' cache cannot be written: the new assignment runs anyway, from memory.
    server.assign('n1', 'web-2', web);
    await waitFor('web-2 running', () => server.observation('n1', 'web-2')?.state === 'running', 10_000);
    // The server refuses the tenure (409 on a report, from the agent's timer): the lease is
    // dropped, which writes lease.json (fails) and fence-at (in place: works on a full disk), and the agent registers again.
    const before = server.tenureOf('n1')!;
    server.nodes.get('n1')!.tenure = before + 1_000;
    await waitFor('registered again', () => {
      const t = server.tenureOf('n1');
      return t !== undefined && t !== before + 1_000 && a.agent.status().tenure === t && a.agent.status().registered;
    }, 15_000);
    await sleep(3_000); // several keepalives, each writing fence-at
    const e0594 = a.logs.filter((l) => l.startsWith('CCA-E0594'));
    const files = e0594.map((l) => /could not write (\S+):/.exec(l)?.[1]?.split('/').pop()).sort();
    // The fence deadlines are overwritten in place: no new block needed, so they never failed, and still move.
    expect(files).toEqual(['desired.json', 'lease.json']);
    expect(Number(fs.readFileSync(join(state.dir, 'fence-at'), 'utf8'))).toBeGreaterThan(Date.now());
    expect(e0594[0]).toContain('ENOSPC');
    failing = false;
    // Tried again by the disk check (every 5 s) with the latest content, without waiting for a change.
    await waitFor('written again', () => a.logs.some((l) => l.endsWith('lease.json written again (CCA-E0594 resolved)')), 10_000);
    await waitFor('reported', () => server.events.filter((e) => e.kind === 'state-problem' && e.message.startsWith('CCA-E0594')).length === 2, 10_000);
  }, 40_000);
});
