import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { FENCE } from '../../agent/core/fence.js';
import { ProcessRuntime } from '../../agent/runtime-process.js';
import { StateDir } from '../../agent/state.js';
import { startServer } from '../../server/start.js';
import { cca } from '../cli/harness.js';
import { HttpTestAgent } from '../server/http-agent.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { adminApi, killLeftoverWorkloads, tempDir, type Json } from './support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';


/**
 * Volumes end to end on the process runtime: a real server (handlers + every controller on
 * a MemoryStore) and a real agent running busybox `sh` under supervisors.
 * 1. A replica writes into its volume and is SIGKILLed; its replacement (a new id, on the
 *    same node) sees what it wrote.
 * 2. The agent stops (the node is lost, two bystander nodes renewing): the stateful replica is held, not replaced, until
 *    `cca fence node n1 --confirm`; then it is, with the decision naming operator-fence,
 *    and when the node returns the replacement goes back to its data.
 * 3. Lost again; the agent returns and confirms the stop itself (proof node-confirmed).
 * 4. The service is deleted: the volume is released, its data kept for keep_for (3 s), then deleted.
 */
const haveBusybox = needs('busybox');

describe.runIf(haveBusybox)('volumes on the process runtime, end to end', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('data survives replacement on the node; a lost node holds the stateful replica until fenced', async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    cleanups.push(() => server.stop());
    const tmp = tempDir('volumes-e2e');
    const state = new StateDir(tmp.dir);
    cleanups.push(() => {
      // Workloads outlive their agent by design: end them (and their supervisors) by pid.
      killLeftoverWorkloads(state.replicas);
      tmp.cleanup();
    });
    const runtime = new ProcessRuntime({ root: state.replicas, fenceFile: state.fenceFile, fenceKillMs: FENCE.killMs, pollMs: 100 });
    cleanups.push(() => runtime.close());
    // Two bystander nodes that only renew their leases: n1 alone would be a one-node cluster,
    // whose silence the node controller holds rather than expires (the quorum rule, docs/fencing.md).
    for (const peer of ['p1', 'p2']) {
      const bystander = new HttpTestAgent(server.url, JOIN, peer, 'b', {});
      await bystander.start();
      cleanups.push(() => bystander.stop());
    }
    const newAgent = () =>
      new Agent({
        server: server.url, node: 'n1', token: JOIN, state, runtime, leaseTtlSeconds: FENCE.minTtlSeconds,
        record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
        pollWaitMs: 1_000, reportEveryMs: 1_000, log: () => undefined,
      });
    let agent = newAgent();
    await agent.start();
    cleanups.push(() => agent.close());
    const api = adminApi(server.url, ADMIN);
    const live = async (): Promise<string[]> => ((await api('GET', '/v1/replicas?service=db')).replicas as Json[]).filter((r) => r.desired === 'run' && !r.retired).map((r) => r.id as string);
    const log = join(tmp.dir, 'volumes', 'db', 'data', 'data', 'log');
    const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []);

    await waitFor('registered', () => agent.status().registered, 10_000);
    // Written through the mount path ($CCA_FILES/data), counted through $CCA_VOLUME_DATA: the same directory.
    await api('POST', '/v1/apply', [
      'service db {',
      '  image    = "busybox:1.35"',
      '  command  = ["sh", "-c", "echo $CCA_REPLICA saw $(cat $CCA_VOLUME_DATA/log 2>/dev/null | wc -l) >> $CCA_FILES/data/log; exec sleep 600"]',
      '  replicas = 1',
      '  cpu      = 0.1',
      '  memory   = 32Mi',
      '  volume data { size = 16Mi mount = "/data" keep_for = 3s }',
      '  stop_grace = 2s',
      '}',
      '',
    ].join('\n'));
    await waitFor('the first replica wrote', () => lines().length === 1, { timeoutMs: 30_000, everyMs: 100 });
    const [first] = await live();
    expect(lines()[0]).toBe(`${first} saw 0`);

    // 1. SIGKILL the workload: a replacement (new id) on the same node sees the data.
    const pid = Number(readFileSync(join(state.replicas, first!, 'workload.pid'), 'utf8').split(' ')[0]);
    process.kill(-pid, 'SIGKILL');
    await waitFor('the replacement wrote', () => lines().length === 2, { timeoutMs: 30_000, everyMs: 100 });
    const [second] = await live();
    expect(second).not.toBe(first);
    expect(lines()[1]).toBe(`${second} saw 1`);
    // Reported every 2 s with its measured usage (the log's bytes, once a report follows the writes).
    const observed = await waitFor('the volume is reported with its data', async () => {
      const kv = ((await api('GET', '/v1/state?prefix=/observed-volumes/n1/')).kvs as Json[])[0];
      const v = kv ? (JSON.parse(kv.value as string) as Json) : undefined;
      return v && v.usedBytes === readFileSync(log).length ? { key: kv!.key as string, v } : undefined;
    }, { timeoutMs: 10_000, everyMs: 200 });
    expect(observed.key).toBe('/observed-volumes/n1/db/data');
    expect(observed.v).toMatchObject({ state: 'ready', sizeBytes: 16 * 2 ** 20 });
    expect(observed.v.usedBytes).toBeGreaterThan(0);
    await waitFor('the storage controller saw it ready', async () => ((await api('GET', '/v1/why/service/db')).history as Json[]).some((h) => h.decision.action === 'volume data ready on n1'), { timeoutMs: 10_000, everyMs: 200 });
    const wanted = (await api('GET', '/v1/state?prefix=/volumes/')).kvs as Json[];
    expect(wanted.map((kv) => kv.key)).toEqual(['/volumes/n1/db/data']);

    // 2. The agent stops: its lease expires, the node is lost, the stateful replica is held.
    await agent.close();
    await waitFor('node lost', async () => ((await api('GET', '/v1/state?prefix=/node-status/n1')).kvs as Json[]).some((kv) => JSON.parse(kv.value as string).state === 'lost'), { timeoutMs: 30_000, everyMs: 200 });
    await new Promise((r) => setTimeout(r, 3_000)); // well past the node controller's grace
    expect(await live()).toEqual([second]);
    const held = await api('GET', `/v1/why/replica/${second}`);
    expect(held.history[0].decision.action).toBe('held: waiting for fencing proof of node n1');
    const view = ((await api('GET', '/v1/replicas?service=db')).replicas as Json[]).find((r) => r.id === second)!;
    expect(view.reason).toContain('waiting for fencing proof of node n1');
    const whyText = await cca(['--server', server.url, '--token', ADMIN, 'why', 'replica', second!]);
    expect(whyText.stdout).toContain('waiting for fencing proof of node n1');

    const unconfirmed = await cca(['--server', server.url, '--token', ADMIN, 'fence', 'node', 'n1']);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain('CCA-E0721');
    const fenced = await cca(['--server', server.url, '--token', ADMIN, 'fence', 'node', 'n1', '--confirm']);
    expect(fenced.stderr).toBe('');
    expect(fenced.code).toBe(0);
    expect(fenced.stdout).toContain('node n1 fenced');
    await waitFor('replaced after the fence', async () => (await live()).some((id) => id !== second), { timeoutMs: 20_000, everyMs: 200 });
    const lostWhy = await api('GET', `/v1/why/replica/${second}`);
    expect((lostWhy.history as Json[]).map((h) => h.decision.action)).toContain('lost with node n1 (proof: operator-fence)');

    // The node returns under a new tenure: the replacement goes to its data there.
    agent = newAgent();
    await agent.start();
    await waitFor('the third replica wrote', () => lines().length === 3, { timeoutMs: 30_000, everyMs: 100 });
    const [third] = await live();
    expect(lines()[2]).toBe(`${third} saw 2`);

    // 3. Lost again, and this time the node itself comes back: its agent, under the new
    //    tenure, confirms the old replica is not running — proof node-confirmed, no operator.
    await agent.close();
    const tenureOf = async () => ((await api('GET', '/v1/state?prefix=/node-status/n1')).kvs as Json[]).map((kv) => JSON.parse(kv.value as string) as Json)[0]!;
    const lostTenure = (await tenureOf()).tenure as number;
    await waitFor('node lost again', async () => (await tenureOf()).state === 'lost', { timeoutMs: 30_000, everyMs: 200 });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await live()).toEqual([third]);
    agent = newAgent();
    await agent.start();
    await waitFor('the fourth replica wrote', () => lines().length === 4, { timeoutMs: 30_000, everyMs: 100 });
    const [fourth] = await live();
    expect(lines()[3]).toBe(`${fourth} saw 3`);
    expect((await tenureOf()).tenure).toBeGreaterThan(lostTenure);
    const confirmedWhy = await api('GET', `/v1/why/replica/${third}`);
    expect((confirmedWhy.history as Json[]).map((h) => h.decision.action)).toContain('lost with node n1 (proof: node-confirmed)');

    // 4. Deleting the service: the storage controller releases the volume, the agent deletes its data.
    const volumeDir = join(tmp.dir, 'volumes', 'db', 'data');
    expect(existsSync(volumeDir)).toBe(true);
    await api('DELETE', '/v1/services/db');
    await waitFor('the volume released, its deletion pending', async () => ((await api('GET', '/v1/volumes')).volumes as Json[]).some((v) => v.state === 'releasing'), { timeoutMs: 10_000, everyMs: 100 });
    expect(existsSync(volumeDir)).toBe(true);
    await waitFor('the volume deleted on the node once keep_for has passed', () => !existsSync(volumeDir), { timeoutMs: 30_000, everyMs: 200 });
    await waitFor('its report gone', async () => ((await api('GET', '/v1/state?prefix=/observed-volumes/')).kvs as Json[]).length === 0, { timeoutMs: 10_000, everyMs: 200 });
    expect(((await api('GET', '/v1/state?prefix=/volumes/')).kvs as Json[])).toEqual([]);
  }, 120_000);
});
