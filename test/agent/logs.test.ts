import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { capAppendedLog, RotatingLog } from '../../agent/logfile.js';
import { lastLines, offsetSince, readLogs } from '../../agent/logs.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { StateDir } from '../../agent/state.js';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { LogFrame, LogRequest } from '../../core/model/index.js';
import { ADMIN, liveServer } from '../cli/harness.js';
import { tempDir, type Json } from './support.js';
import { waitFor } from '../support/wait.js';

const req = (over: Partial<LogRequest> = {}): LogRequest => ({ id: '0'.repeat(32), replica: 'r-1', follow: false, previous: false, ...over });

async function collect(gen: AsyncGenerator<LogFrame>): Promise<LogFrame[]> {
  const out: LogFrame[] = [];
  for await (const f of gen) out.push(f);
  return out;
}

describe('log files and their reader (agent/logfile.ts, agent/logs.ts)', () => {
  const tmp = tempDir('logfiles');
  afterAll(() => tmp.cleanup());

  it('RotatingLog keeps each file under the cap with one rotated copy, and marks times', () => {
    let now = 1_000_000;
    const file = join(tmp.dir, 'stdout.log');
    const log = new RotatingLog(file, 100, () => now);
    for (let i = 0; i < 50; i++) {
      log.write(Buffer.from(`line ${String(i).padStart(3, '0')}\n`));
      now += 500;
    }
    expect(readFileSync(file).length).toBeLessThanOrEqual(100);
    expect(readFileSync(`${file}.1`).length).toBeLessThanOrEqual(100);
    expect(readFileSync(file, 'utf8').trimEnd().split('\n').pop()).toBe('line 049');
    // A mark at most every second: half of the writes here.
    const marks = readFileSync(`${file}.times`, 'utf8').trim().split('\n');
    expect(marks.length).toBeGreaterThan(0);
    expect(marks.length).toBeLessThanOrEqual(Math.ceil(readFileSync(file, 'utf8').split('\n').length / 2) + 1);
  });

  it('capAppendedLog copies and truncates a file another process appends to', () => {
    const file = join(tmp.dir, 'ctr.log');
    writeFileSync(file, 'x'.repeat(150));
    capAppendedLog(file, 100, 5);
    expect(readFileSync(file).length).toBe(0);
    expect(readFileSync(`${file}.1`).length).toBe(150);
    appendFileSync(file, 'after\n');
    expect(readFileSync(file, 'utf8')).toBe('after\n');
  });

  it('offsetSince finds the first byte written at or after a time; lastLines counts lines', () => {
    const file = join(tmp.dir, 'since.log');
    writeFileSync(file, 'old\nnew\n');
    writeFileSync(`${file}.times`, '0 1000\n4 5000\n');
    expect(offsetSince(file, 500)).toBe(0);
    expect(offsetSince(file, 5000)).toBe(4);
    expect(offsetSince(file, 9000)).toBe(4);
    expect(lastLines(Buffer.from('a\nb\nc\n'), 2).toString()).toBe('b\nc\n');
    expect(lastLines(Buffer.from('a\nb'), 5).toString()).toBe('a\nb');
  });

  it('one request is bounded: bytes of history, bytes while following, and time', async () => {
    const file = join(tmp.dir, 'bound.log');
    writeFileSync(file, Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join(''));
    const history = await collect(readLogs([file], req(), new AbortController().signal, { maxBytes: 40 }));
    const text = history.map((f) => ('text' in f ? f.text : '')).join('');
    expect(text.length).toBeLessThanOrEqual(40);
    expect(text.startsWith('line ')).toBe(true);
    expect(text.endsWith('line 99\n')).toBe(true);

    const timed = await collect(readLogs([file], req({ follow: true, tail: 1 }), new AbortController().signal, { maxFollowMs: 300, pollMs: 20 }));
    expect(timed.at(-1)).toMatchObject({ end: { code: 'CCA-E0561' } });

    const ac = new AbortController();
    const gen = readLogs([file], req({ follow: true, tail: 0 }), ac.signal, { maxBytes: 100, pollMs: 20 });
    const frames: LogFrame[] = [];
    const done = (async () => {
      for await (const f of gen) frames.push(f);
    })();
    for (let i = 0; i < 30; i++) {
      appendFileSync(file, `more ${i}\n`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await done;
    expect(frames.at(-1)).toMatchObject({ end: { code: 'CCA-E0561' } });
    expect(frames.map((f) => ('text' in f ? f.text : '')).join('').length).toBeLessThanOrEqual(100);
  });
});

describe('the agent serves only replicas it holds', () => {
  it('a request for a replica placed on its node but not held is refused by the agent (CCA-E0560)', async () => {
    const live = await liveServer();
    const tmp = tempDir('logs-refuse');
    const agent = new Agent({
      server: live.url, node: 'n1', token: ADMIN, state: new StateDir(tmp.dir), runtime: new FakeRuntime(),
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 1000, memoryBytes: 2 ** 30 } },
      pollWaitMs: 1_000, log: () => undefined,
    });
    try {
      await agent.start();
      await waitFor('registered', () => agent.status().registered, 10_000);
      // The server believes the replica is on n1 (a stale or forged placement): the agent's own check decides.
      await live.store.put(buildKey('placement', 'ghost-1'), encodeFact('placement', { replica: 'ghost-1', service: 'web', node: 'n1', tenure: 1, at: 1 }));
      const r = await live.run(['logs', 'ghost-1']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('CCA-E0560');
      expect(r.stderr).toContain('node n1');
    } finally {
      await agent.close();
      await live.close();
      tmp.cleanup();
    }
  }, 20_000);
});

describe('over TLS', () => {
  it('the agent streams its answer through its --ca fetch (a streamed request body over https)', async () => {
    const { makeTestCa } = await import('../support/tls-certs.js');
    const { fetchTrusting, readCaFile } = await import('../../agent/https.js');
    const { startServer } = await import('../../server/start.js');
    const { ProcessRuntime } = await import('../../agent/runtime-process.js');
    const { killLeftoverWorkloads } = await import('./support.js');
    const { JOIN } = await import('../handlers/harness.js');
    const tmp = tempDir('logs-tls');
    const ca = makeTestCa(tmp.dir, 'ca');
    const cert = ca.issue('server');
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test', tlsCert: cert.cert, tlsKey: cert.key });
    const fetchTls = fetchTrusting(readCaFile(ca.cert));
    const runtime = new ProcessRuntime({ root: join(tmp.dir, 'replicas'), fenceFile: '', fenceKillMs: 2_000 });
    const agent = new Agent({
      server: server.url, node: 't1', token: JOIN, state: new StateDir(tmp.dir), runtime, fetch: fetchTls,
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 1000, memoryBytes: 2 ** 30 } },
      pollWaitMs: 1_000, reportEveryMs: 1_000, log: () => undefined,
    });
    try {
      await agent.start();
      await waitFor('registered', () => agent.status().registered, 15_000);
      const api = (method: string, path: string, body?: string) => fetchTls(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'text/x-cca' } : {}) }, ...(body ? { body } : {}) }).then((r) => r.json() as Promise<Json>);
      await api('POST', '/v1/apply', 'service hello {\n  image = "ccattler/toolbox:1"\n  command = ["sh", "-c", "echo hello over tls; sleep 600"]\n  replicas = 1\n  cpu = 0.1\n  memory = 32Mi\n}\n');
      const id = await waitFor('placed', async () => ((await api('GET', '/v1/replicas?service=hello')).replicas as { id: string; state: string }[]).find((r) => r.state === 'running')?.id, { timeoutMs: 20_000, everyMs: 200 });
      const text = await waitFor('output', async () => {
        const r = await fetchTls(`${server.url}/v1/replicas/${id}/logs`, { headers: { authorization: `Bearer ${ADMIN}` } });
        const t = await r.text();
        return t.includes('hello over tls') ? t : undefined;
      }, { timeoutMs: 10_000, everyMs: 200 });
      expect(text.split('\n')[0]).toContain('"serving"');
      expect(text).toContain('{"stream":"stdout","text":"hello over tls\\n"}');
    } finally {
      await agent.close();
      await runtime.close();
      killLeftoverWorkloads(join(tmp.dir, 'replicas'));
      await server.stop();
      tmp.cleanup();
    }
  }, 60_000);
});
