import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { ProcessRuntime } from '../../agent/runtime-process.js';
import { StateDir } from '../../agent/state.js';
import { FENCE } from '../../agent/core/fence.js';
import { controllers } from '../../jobs/controllers/index.js';
import { standInEndpoints } from '../../jobs/sim/story-ordering.js';
import { startServer, type RunningServer } from '../../server/start.js';
import { cca } from '../cli/harness.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { killLeftoverWorkloads, tempDir } from './support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API answers, checked field by field

/**
 * Init steps, backoff and `after` end to end: the real server (API + controllers on a
 * MemoryStore) and the real agent on the process runtime (supervisors, process groups).
 */
describe.runIf(needs('busybox'))('init and ordering on the process runtime, real server and agent', () => {
  const tmp = tempDir('ordering-e2e');
  let server: RunningServer;
  let agent: Agent;
  let runtime: ProcessRuntime;
  const api = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const r = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return (await r.json()) as Json;
  };
  const replicas = async (service: string): Promise<Json[]> => (await api('GET', `/v1/replicas?service=${service}`)).replicas as Json[];

  beforeAll(async () => {
    server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    runtime = new ProcessRuntime({ root: join(tmp.dir, 'state', 'replicas'), fenceFile: '', fenceKillMs: FENCE.killMs, pollMs: 50 });
    agent = new Agent({
      server: server.url, node: 'p1', token: JOIN, state: new StateDir(join(tmp.dir, 'state')), runtime,
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
      pollWaitMs: 1_000, reportEveryMs: 1_000, log: () => undefined,
    });
    await agent.start();
    await waitFor('registered', () => agent.status().registered, 10_000);
  }, 30_000);

  afterAll(async () => {
    for (const s of ['seq', 'mig', 'slow', 'db', 'api']) await api('DELETE', `/v1/services/${s}`).catch(() => undefined);
    await waitFor('stopped', async () => (await runtime.list({ usage: false })).every((w) => w.state === 'exited'), { timeoutMs: 15_000, everyMs: 200 }).catch(() => undefined);
    await agent?.close();
    await runtime?.close?.();
    // Workloads outlive their agent by design: end any left (and their supervisors) by pid.
    const root = join(tmp.dir, 'state', 'replicas');
    killLeftoverWorkloads(root);
    await server?.stop();
    tmp.cleanup();
  }, 30_000);

  it('runs two init steps in order before the main process, which sees what both wrote', async () => {
    const out = join(tmp.dir, 'seq');
    await api('POST', '/v1/apply', {
      services: [{
        name: 'seq', image: 'busybox:1.35',
        init: [
          { name: 'first', command: ['sh', '-c', `mkdir -p ${out} && echo one >> ${out}/order`] },
          { name: 'second', command: ['sh', '-c', `test -f ${out}/order && echo two >> ${out}/order`] },
        ],
        command: ['sh', '-c', `cp ${out}/order ${out}/main-saw && exec sleep 1000`],
      }],
    });
    await waitFor('seq running', async () => (await api('GET', '/v1/services/seq')).service?.running === 1, { timeoutMs: 30_000, everyMs: 100 });
    expect(readFileSync(join(out, 'main-saw'), 'utf8')).toBe('one\ntwo\n');
    const [r] = await replicas('seq');
    expect(r!.init).toMatchObject({ step: 'second', state: 'succeeded' });
  }, 40_000);

  it('a failing init step is reported with its code and output tail, and retried with a doubling delay held in the store', async () => {
    await api('POST', '/v1/apply', {
      services: [{ name: 'mig', image: 'busybox:1.35', init: [{ name: 'migrate', command: ['sh', '-c', 'echo "connecting"; echo "no database at db:5432" >&2; exit 4'] }], command: ['sleep', '1000'] }],
    });
    // Follow the replicas: each new one's backoff, and when it was first seen placed.
    type Seen = { attempt: number; createdAt: number; notBefore?: number; placedSeenAt?: number };
    const seen = new Map<string, Seen>();
    const reasons = new Set<string>();
    await waitFor('three failures in a row', async () => {
      for (const r of await replicas('mig')) {
        const s: Seen = seen.get(r.id) ?? { attempt: r.attempt, createdAt: r.createdAt, ...(r.notBefore !== undefined ? { notBefore: r.notBefore } : {}) };
        if (r.node && s.placedSeenAt === undefined) s.placedSeenAt = Date.now();
        seen.set(r.id, s);
      }
      for (const p of (await api('GET', '/v1/services/mig')).service.pending as Json[]) reasons.add(p.reason);
      return [...seen.values()].some((s) => s.attempt >= 3);
    }, { timeoutMs: 30_000, everyMs: 50 });
    const chain = [...seen.values()].sort((a, b) => a.createdAt - b.createdAt);
    expect(chain.map((s) => s.attempt).slice(0, 4)).toEqual([0, 1, 2, 3]);
    // 1 s, 2 s, 4 s after each failure; and no replacement was placed before its time.
    expect(chain.slice(1, 4).map((s) => s.notBefore! - s.createdAt)).toEqual([1_000, 2_000, 4_000]);
    for (const s of chain.slice(1)) if (s.placedSeenAt !== undefined) expect(s.placedSeenAt).toBeGreaterThanOrEqual(s.notBefore!);
    // Status says why the replacement waits.
    expect([...reasons].some((r) => /^backing off after init step migrate failed \(code 4\), retry in [124] s \(failure [123] in a row\)/.test(r))).toBe(true);
    // `cca why` on a replacement reaches the failed observation, with the tail as evidence.
    const last = [...seen.entries()].sort((a, b) => b[1].createdAt - a[1].createdAt)[0]![0];
    const why = await cca(['why', 'replica', last, '--server', server.url, '--token', ADMIN]);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain('init step migrate failed (code 4)');
    expect(why.stdout).toContain('no database at db:5432');
    // The failed replica's observation, as the retire decision kept it: step, code, tail, coded diagnostic.
    const evidence = ((await api('GET', `/v1/why/replica/${last}`)) as Json).chain
      .flatMap((l: Json) => l.decision.evidence as Json[])
      .filter((e: Json) => e.key.startsWith('/observed/'))
      .map((e: Json) => JSON.parse(e.value) as Json);
    expect(evidence[0].init).toMatchObject({ step: 'migrate', state: 'failed', exitCode: 4 });
    expect(evidence[0].init.tail).toContain('no database at db:5432');
    expect(evidence[0].diagnostic.code).toBe('CCA-E0518');
    await api('DELETE', '/v1/services/mig');
  }, 60_000);

  it('an init step past its timeout is killed and reported as timed out (CCA-E0519)', async () => {
    await api('POST', '/v1/apply', { services: [{ name: 'slow', image: 'busybox:1.35', init: [{ name: 'wait', command: ['sh', '-c', 'echo waiting; exec sleep 60'], timeoutMs: 300 }], command: ['sleep', '1000'] }] });
    const next = await waitFor('replacement backs off', async () => (await replicas('slow')).find((r) => r.attempt >= 1), { timeoutMs: 20_000, everyMs: 50 });
    const chain = ((await api('GET', `/v1/why/replica/${next.id}`)) as Json).chain as Json[];
    expect(JSON.stringify(chain.map((l) => l.decision.reasons))).toContain('init step wait timed out');
    const failed = chain.flatMap((l) => l.decision.evidence as Json[]).filter((e) => e.key.startsWith('/observed/')).map((e) => JSON.parse(e.value) as Json)[0]!;
    expect(failed.init).toMatchObject({ step: 'wait', timedOut: true, exitCode: 137 });
    expect(failed.init.tail).toContain('timed out after 300 ms');
    expect(failed.diagnostic.code).toBe('CCA-E0519');
    await api('DELETE', '/v1/services/slow');
  }, 30_000);

  it('`after` holds api until db has its desired count ready (fixtures/ordering.cca): then api\'s init steps reach db and its main process sees both', async () => {
    // Until the endpoint controller is registered, the test publishes /endpoints/ from the
    // agent's admissible observations (running, readiness passing) as that controller would.
    const standIn = !controllers().some((c) => c.name === 'endpoints');
    let publishing = standIn;
    const loop = (async () => {
      while (publishing) {
        await standInEndpoints(server.store, ['db', 'api'], Date.now());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      const text = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'ordering.cca'), 'utf8');
      const applied = await fetch(`${server.url}/v1/apply`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/x-cca' }, body: text });
      expect(applied.status).toBe(200);
      // What `cca get services -o wide` shows while api is held.
      const held = await waitFor('api held', async () => {
        const r = await cca(['get', 'services', 'api', '-o', 'wide', '--server', server.url, '--token', ADMIN]);
        return r.stdout.includes('waiting for db: 0/1 ready') ? r.stdout : undefined;
      }, { timeoutMs: 20_000, everyMs: 100 });
      expect(held).toMatch(/api\s+0\/1/);
      const dbRunning = await waitFor('db running', async () => (await replicas('db')).find((r) => r.state === 'running'), { timeoutMs: 20_000, everyMs: 50 });
      expect(dbRunning).toBeDefined();
      await waitFor('api running', async () => (await api('GET', '/v1/services/api')).service?.running === 1, { timeoutMs: 30_000, everyMs: 100 });
      const [apiReplica] = await replicas('api');
      const answer = (await api('GET', `/v1/why/replica/${apiReplica!.id}`)) as Json;
      const placed = JSON.stringify(answer);
      expect(placed).toContain('after db: 1/1 ready');
      expect(placed).toContain('/endpoints/db');
      // api's init steps ran in order, the second one reaching db; its main process printed both.
      const log = join(tmp.dir, 'state', 'replicas', apiReplica!.id as string, 'stdout.log');
      await waitFor('api main output', () => existsSync(log) && readFileSync(log, 'utf8').includes('seeded'), { timeoutMs: 10_000, everyMs: 100 });
      expect(readFileSync(log, 'utf8')).toBe('schema v1\nseeded\n');
      expect(apiReplica!.init).toMatchObject({ step: 'seed', state: 'succeeded' });
    } finally {
      publishing = false;
      await loop;
    }
  }, 60_000);
});
