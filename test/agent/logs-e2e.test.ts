import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { ProcessRuntime } from '../../agent/runtime-process.js';
import { StateDir } from '../../agent/state.js';
import { FENCE } from '../../agent/core/fence.js';
import { startServer } from '../../server/start.js';
import { cca } from '../cli/harness.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { adminApi, killLeftoverWorkloads, tempDir, type Json } from './support.js';
import { waitFor } from '../support/wait.js';

/**
 * `cca logs` end to end on the process runtime: the real server (handlers, controllers, the
 * log relay), an agent with the real process runtime and supervisors, and the CLI in-process.
 */
describe('cca logs (process runtime, real server)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  let url = '';
  let api: ReturnType<typeof adminApi>;
  let replicasDir = '';
  let agent: Agent;
  const CAP = 8 * 1024;

  beforeAll(async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    cleanups.push(() => server.stop());
    url = server.url;
    api = adminApi(url, ADMIN);
    const tmp = tempDir('logs');
    replicasDir = join(tmp.dir, 'replicas');
    const runtime = new ProcessRuntime({ root: replicasDir, fenceFile: '', fenceKillMs: FENCE.killMs, logMaxBytes: CAP });
    agent = new Agent({
      server: url, node: 'n1', token: JOIN, state: new StateDir(tmp.dir), runtime,
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
      pollWaitMs: 2_000, reportEveryMs: 1_000, log: () => undefined,
    });
    await agent.start();
    cleanups.push(async () => {
      await agent.close();
      await runtime.close();
      killLeftoverWorkloads(replicasDir);
      tmp.cleanup();
    });
    await waitFor('registered', () => agent.status().registered, 10_000);
    // ticker: a numbered line a tenth of a second, stderr now and then; chatty: 200-byte lines, fast.
    await api('POST', '/v1/apply', [
      'service ticker {\n  image = "ccattler/toolbox:1"\n  command = ["sh", "-c", "echo early; sleep 2; i=0; while true; do i=$((i+1)); echo tick $i; [ $((i % 10)) = 0 ] && echo oops $i >&2; sleep 0.1; done"]\n  replicas = 1\n  cpu = 0.1\n  memory = 32Mi\n}\n',
      'service chatty {\n  image = "ccattler/toolbox:1"\n  command = ["sh", "-c", "line=$(printf \'%0199d\' 0); while true; do yes $line | head -c 20000; sleep 0.5; done"]\n  replicas = 1\n  cpu = 0.1\n  memory = 32Mi\n}\n',
    ].join('\n'));
    await waitFor('both running', async () => (await api('GET', '/v1/services/ticker')).service?.running === 1 && (await api('GET', '/v1/services/chatty')).service?.running === 1, { timeoutMs: 30_000, everyMs: 200 });
  }, 60_000);

  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  const sizeOf = (f: string): number => {
    try {
      return statSync(f).size;
    } catch {
      return 0;
    }
  };
  const replicaOf = async (service: string): Promise<string> => ((await api('GET', `/v1/replicas?service=${service}`)).replicas as Json[])[0]!.id as string;
  const run = (argv: string[], opts: Parameters<typeof cca>[1] = {}) => cca(['--server', url, '--token', ADMIN, ...argv], opts);

  it('-f follows new lines, stdout to stdout and stderr to stderr, until interrupted', async () => {
    const id = await replicaOf('ticker');
    const ac = new AbortController();
    let start = -1;
    const r = await run(['logs', id, '-f'], {
      signal: ac.signal,
      onWrite: (o) => {
        const ticks = [...o.stdout.matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
        if (start < 0 && ticks.length > 0) start = ticks[ticks.length - 1]!;
        // Lines written after the command started arrive while it runs.
        if (start >= 0 && ticks.some((t) => t >= start + 15) && o.stderr.includes('oops')) ac.abort();
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('early\n');
    expect(r.stdout).not.toContain('oops');
    expect(r.stderr).toMatch(/oops \d+/);
  }, 30_000);

  it('--tail N gives the last N lines; --since leaves out what is older', async () => {
    const id = await replicaOf('ticker');
    // Long enough that a second back is a small part of it.
    await waitFor('40 ticks', async () => (await run(['logs', id])).stdout.includes('tick 40\n'), { timeoutMs: 20_000, everyMs: 500 });
    const tail = await run(['logs', id, '--tail', '3']);
    expect(tail.code, tail.stderr).toBe(0);
    const lines = tail.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(l).toMatch(/^tick \d+$/);
    // "early" came two seconds before the first tick; the replica has run for more than that.
    const all = await run(['logs', id]);
    expect(all.stdout.startsWith('early\n')).toBe(true);
    const recent = await run(['logs', id, '--since', '1s']);
    expect(recent.code, recent.stderr).toBe(0);
    expect(recent.stdout).not.toContain('early');
    expect(recent.stdout).toMatch(/tick \d+/);
    // At most ~2 s of ticks (10 a second), far fewer than all of them.
    const n = (s: string) => s.split('\n').filter((l) => l.startsWith('tick')).length;
    expect(n(recent.stdout)).toBeLessThanOrEqual(25);
    expect(n(all.stdout)).toBeGreaterThan(n(recent.stdout));
  }, 30_000);

  it('rotation keeps a chatty workload under the cap, and --previous reads the rotated file', async () => {
    const id = await replicaOf('chatty');
    const dir = join(replicasDir, id);
    await waitFor('rotated', () => readdirSync(dir).includes('stdout.log.1'), { timeoutMs: 10_000, everyMs: 100 });
    // It keeps writing for a while: several rotations.
    await new Promise((r) => setTimeout(r, 1_500));
    // Sampled while it writes (a rotation renames then reopens: a missing file reads as empty).
    for (let i = 0; i < 20; i++) {
      for (const f of ['stdout.log', 'stdout.log.1']) expect(sizeOf(join(dir, f))).toBeLessThanOrEqual(CAP);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(readdirSync(dir).filter((f) => /^stdout\.log\.\d+$/.test(f))).toEqual(['stdout.log.1']);
    const prev = await run(['logs', id, '--previous']);
    expect(prev.code, prev.stderr).toBe(0);
    expect(prev.stdout.length).toBeGreaterThan(0);
    expect(prev.stdout.length).toBeLessThanOrEqual(CAP);
  }, 30_000);

  it('a reader token reads logs; another node\'s credential, no token, and an unknown replica are refused with codes', async () => {
    const id = await replicaOf('ticker');
    const res = await fetch(`${url}/v1/tokens`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ role: 'reader' }) });
    const reader = ((await res.json()) as Json).token as string;
    const asReader = await cca(['--server', url, '--token', reader, 'logs', id, '--tail', '1']);
    expect(asReader.code, asReader.stderr).toBe(0);
    expect(asReader.stdout).toMatch(/^tick \d+\n$/);

    const enrolled = await fetch(`${url}/v1/agent/enroll`, { method: 'POST', headers: { authorization: `Bearer ${JOIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ node: 'intruder' }) });
    const credential = ((await enrolled.json()) as Json).credential as string;
    const asNode = await fetch(`${url}/v1/replicas/${id}/logs?tail=1`, { headers: { authorization: `Bearer ${credential}` } });
    expect(asNode.status).toBe(403);
    expect(((await asNode.json()) as Json).error.code).toBe('CCA-E0636');
    // Nor may it take n1's log requests or answer them.
    const poll = await fetch(`${url}/v1/agent/nodes/n1/log-requests?waitMs=0`, { headers: { authorization: `Bearer ${credential}` } });
    expect(poll.status).toBe(403);
    const answer = await fetch(`${url}/v1/agent/nodes/n1/log-requests/${'0'.repeat(32)}/stream`, { method: 'POST', headers: { authorization: `Bearer ${credential}` }, body: '' });
    expect(answer.status).toBe(403);

    const anonymous = await cca(['--server', url, 'logs', id]);
    expect(anonymous.code).toBe(1);
    expect(anonymous.stderr).toContain('CCA-E0605');
    const unknown = await run(['logs', 'nope-123']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('CCA-E0672');
  }, 30_000);
});
