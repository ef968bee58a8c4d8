import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/databases.js';

const root = path.resolve(import.meta.dirname, '..', '..');

/** Run a benchmark at a tiny size; its last line must be its JSON. Not timed: only that it runs and reports. */
async function bench(script: string, env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; out: string; json: Record<string, unknown> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  const last = out.trim().split('\n').at(-1) ?? '';
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(last) as Record<string, unknown>;
  } catch {
    // reported by the assertions below, with the output
  }
  return { code, out, json };
}

describe('benchmarks at a tiny size', () => {
  it('bench:controller-steps steps the real controllers for each service and reports each one\'s CPU and keys', async () => {
    const r = await bench('bench/controller-steps.ts', {}, ['--replicas', '20', '--services', '2']);
    expect(r.code, r.out).toBe(0);
    expect(r.json).toMatchObject({ bench: 'controller-steps', replicas: 20, services: 2 });
    expect(Object.keys(r.json.placing as object)).toEqual(expect.arrayContaining(['replica', 'scheduler', 'endpoints']));
    // Per-service controllers step once per service; one service's step reads its 10 replicas' keys.
    expect(r.json).toMatchObject({ placing: { replica: { steps: 2 }, scheduler: { steps: 1 } }, oneService: { replica: { keys: expect.any(Number) } } });
    expect((r.json.oneService as { endpoints: { keys: number } }).endpoints.keys).toBeLessThan(20 * 4);
    // A report that moved only its usage figure, routed as the job hook routes it, wakes no step.
    expect(r.json.usageReport).toMatchObject({ steps: 0, cpuMs: 0 });
  }, 120_000);

  it('bench:scheduler places a tiny cluster on MemoryStore and on Postgres, its commits enqueueing controller jobs as a server pod\'s do', async () => {
    const db = await createTestDatabase('benchsched');
    try {
      const r = await bench('bench/scheduler.ts', { DATABASE_URL: db.url }, ['--replicas', '30', '--nodes', '6']);
      expect(r.code, r.out).toBe(0);
      expect(r.json, r.out).toMatchObject({ replicas: 30, nodes: 6, memory: { placements: 30 }, postgres: { placements: 30, commitHook: true } });
      const jobs = new pg.Client({ connectionString: db.url });
      await jobs.connect();
      try {
        // Every placement wakes the controllers that watch assignments: their jobs are queued.
        expect(Number((await jobs.query<{ n: string }>('SELECT count(*) AS n FROM graphile_worker.jobs')).rows[0]!.n), r.out).toBeGreaterThan(0);
      } finally {
        await jobs.end();
      }
    } finally {
      await db.drop();
    }
  }, 120_000);

  it('bench/heap-diff.ts finds what is new in the second of two heap snapshots, who holds it and its path from the roots', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cca-heap-diff-'));
    try {
      // Between the two snapshots the script keeps 20,000 objects of a class of its own in an array.
      const script = `const v8 = require('node:v8'); class Kept { constructor(i) { this.i = i; } }
        v8.writeHeapSnapshot(${JSON.stringify(path.join(dir, 'a.heapsnapshot'))});
        globalThis.kept = Array.from({ length: 20000 }, (_, i) => new Kept(i));
        v8.writeHeapSnapshot(${JSON.stringify(path.join(dir, 'b.heapsnapshot'))});`;
      await new Promise((r) => spawn(process.execPath, ['-e', script], { stdio: 'ignore' }).on('exit', r));
      const r = await bench('bench/heap-diff.ts', {}, [path.join(dir, 'a.heapsnapshot'), path.join(dir, 'b.heapsnapshot'), '--retainers', 'Kept', '--paths', 'Kept']);
      expect(r.code, r.out).toBe(0);
      const top = r.json.top as { group: string; newCount: number }[];
      expect(top.find((t) => t.group === 'Kept')?.newCount, r.out).toBe(20000);
      expect((r.json.retainers as Record<string, number>)['Array .[element]'], r.out).toBe(20000);
      // What keeps them alive: the global's \`kept\`, then the array's element.
      const paths = r.json.paths as string[][];
      expect(paths.length, r.out).toBe(5);
      for (const p of paths) {
        expect(p.some((step) => step.endsWith('.kept')), r.out).toBe(true);
        expect(p.at(-1), r.out).toMatch(/^Array\.\[\d+\]$/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('bench:system converges a tiny cluster of two services, recovers a lost node and reports the workers\' time', async () => {
    const r = await bench('bench/system.ts', {}, ['--agents', '3', '--replicas', '6', '--services', '2']);
    expect(r.code, r.out.slice(-3000)).toBe(0);
    expect(r.json).toMatchObject({ bench: 'system', agents: 3, replicas: 6, services: 2, nodeLoss: { recovered: true, leaseTtlSeconds: 30 } });
    expect(r.json.workerSeconds).toHaveProperty('replica');
    // Where the recovery went: the node's loss, then its replicas' replacements, by their decisions' times.
    const timeline = (r.json.recoveryTimeline as { what: string; first: number }[]).map((x) => x.what);
    expect(timeline, r.out.slice(-3000)).toEqual(expect.arrayContaining(['node node-lost', 'replica node-lost', 'replica rc-create', 'replica sched-place']));
    // The victim's last renewal is known, so the node's judgement is timed from its TTL of silence, not from the kill.
    const loss = r.json.nodeLoss as { lease: { renewedBeforeStopSeconds: number; silentForTtlAfterStopSeconds: number } | null; judgedAfterSilentForTtlSeconds: number | null };
    expect(loss.lease, r.out.slice(-3000)).not.toBeNull();
    expect(loss.lease!.renewedBeforeStopSeconds).toBeGreaterThanOrEqual(0);
    expect(loss.lease!.renewedBeforeStopSeconds).toBeLessThan(30);
    expect(loss.judgedAfterSilentForTtlSeconds).toBeGreaterThanOrEqual(0);
    const reg = r.json.registration as { registeredSeconds: number; allReadySeconds: number };
    expect(reg.registeredSeconds).toBeGreaterThan(0);
    expect(reg.allReadySeconds).toBeGreaterThanOrEqual(reg.registeredSeconds);
    // The agents' own view is reported: none of a healthy run's agents fenced, and they kept renewing.
    expect(r.json.agentVitals, r.out.slice(-3000)).toMatchObject({ fencedDuringConvergence: 0, fencedEver: 0 });
    expect((r.json.agentVitals as { longestSinceKeepaliveMs: number }).longestSinceKeepaliveMs).toBeGreaterThan(0);
    expect(r.json.agentVitals).toHaveProperty('peerQuestions');
    // Where the convergence went: every count reached its whole target, placed no later than running.
    const m = r.json.convergenceMilestones as Record<'replicas' | 'placed' | 'running', Record<string, number>>;
    expect(m.running['100%'], r.out.slice(-3000)).toBeGreaterThan(0);
    expect(m.placed['100%']).toBeLessThanOrEqual(m.running['100%']!);
    expect(m.replicas['100%']).toBeLessThanOrEqual(m.placed['100%']!);
  }, 240_000);

  it('bench:server runs its watch fan-out and agents in separate processes and reports', async () => {
    const r = await bench('bench/server.ts', { BENCH_WATCHERS: '3', BENCH_WATCH_WORKERS: '2', BENCH_RATE: '20', BENCH_SECONDS: '1', BENCH_WARMUP_SECONDS: '0.5', BENCH_AGENTS: '2', BENCH_AGENT_WORKERS: '2' });
    expect(r.code, r.out).toBe(0);
    expect(r.json.bench, r.out).toBe('server');
    expect(typeof r.json.load).toBe('number');
    const res = r.json.results as Record<string, number>;
    // Every watcher got every event, in order: the figures are about a complete delivery.
    expect(res['watch.delivered_fraction']).toBe(1);
    // The warm-up's events (10) are delivered too; only their latency is left out.
    expect(res['watch.events_delivered']).toBe(3 * (10 + 20));
    expect(res['watch.out_of_order']).toBe(0);
    expect(res['watch.p99_ms']).toBeGreaterThanOrEqual(0);
    expect(res['watch.pod_cpu_s_per_10k_events']).toBeGreaterThan(0);
    expect(res['agents.registered']).toBe(2);
    expect(res['agents.process_rss_mib_max']).toBeGreaterThan(0);
    // The agents' cost is measured apart from the applies' (which wake controllers).
    expect(res['agents.pod_cpu_ms_per_agent_second']).toBeGreaterThan(0);
    expect(res['agents_and_applies.pod_cpu_cores']).toBeGreaterThan(0);
  }, 300_000);

  it('bench:soak samples the pod and agent processes each "minute" and reports the growth', async () => {
    const r = await bench('bench/soak.ts', { BENCH_MINUTES: '3', BENCH_WARMUP_MINUTES: '1', BENCH_MINUTE_MS: '3000', BENCH_AGENTS: '2', BENCH_WORKERS: '2' });
    expect(r.code, r.out).toBe(0);
    expect(r.json.bench, r.out).toBe('soak');
    expect(typeof r.json.load).toBe('number');
    expect((r.json.samples as unknown[]).length).toBe(3);
    const res = r.json.results as { registered: number; podRssMiB: { growth: number }; agentProcessRssMiB: { growth: number } };
    expect(res.registered).toBe(2);
    expect(Number.isFinite(res.podRssMiB.growth)).toBe(true);
    expect(Number.isFinite(res.agentProcessRssMiB.growth)).toBe(true);
  }, 300_000);
});
