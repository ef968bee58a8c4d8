import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { dashboardMetrics } from '../support/dashboard.js';
import { createTestDatabase } from '../support/databases.js';
import { startPod, type Pod } from '../support/pods.js';
import { parsePromText, total, type Sample } from '../support/prom-text.js';
import { waitFor } from '../support/wait.js';

/**
 * A real server pod on Postgres, driven by the real CLI: its stdout is its JSON log (one
 * line per request with the request ID the CLI prints, controller steps, graphile-worker's
 * own lines, never a token), and its /metrics carries every metric docs/observability.md
 * names and the dashboard queries.
 */
const cleanups: (() => Promise<void>)[] = [];
const tmp = mkdtempSync(join(tmpdir(), 'cca-obs-'));
let pod: Pod;
let dbUrl: string;

afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
});

function cca(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/cca.mjs', ...args], { env: { ...process.env, CCA_SERVER: pod.url, CCA_TOKEN: ADMIN, CCA_CONFIG: join(tmp, 'none.json'), CCA_STATE_DIR: join(tmp, 'state') } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

type Line = Record<string, unknown>;
/** Every stdout line is one JSON object (the bootstrap tokens and start-up failures go to stderr). */
const logLines = (): Line[] => pod.stdout().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);

async function scrape(): Promise<{ samples: Sample[]; types: Map<string, string> }> {
  return parsePromText(await (await fetch(`${pod.url}/metrics`)).text());
}

beforeAll(async () => {
  const db = await createTestDatabase('obs');
  cleanups.push(db.drop);
  dbUrl = db.url;
  pod = await startPod('obs', db.url, cleanups, ['--log-level', 'debug']);
}, 60_000);

describe('the server pod log', () => {
  test('the request ID the CLI prints for a failing request, and the one it sends for a good one, are each one log line with route, status and duration', async () => {
    const failed = await cca(['why', 'replica', 'no-such-replica']);
    expect(failed.code, failed.stderr).not.toBe(0);
    const shown = /request: (\S+)/.exec(failed.stderr)?.[1];
    expect(shown, failed.stderr).toMatch(/^c-/);

    const spec = join(tmp, 'web.cca');
    writeFileSync(spec, 'service web {\n  image    = "busybox:1.35"\n  replicas = 2\n  cpu      = 0.1\n  memory   = 16Mi\n}\n');
    const applied = await cca(['apply', spec, '--yes', '--request-id', 'obs-apply-1']);
    expect(applied.code, applied.stderr).toBe(0);

    const lines = await waitFor('both requests in the log', async () => logLines(), (ls) => ls.some((l) => l.requestId === shown) && ls.some((l) => String(l.requestId).startsWith('obs-apply-1')), 10_000);
    const bad = lines.filter((l) => l.requestId === shown);
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatchObject({ level: 'info', component: 'http', method: 'GET', route: '/v1/why/:kind/:name', msg: 'request' });
    expect(bad[0]!.status).toBeGreaterThanOrEqual(400);
    expect(bad[0]!.code).toMatch(/^CCA-E\d{4}$/);
    expect(bad[0]!.durationMs).toEqual(expect.any(Number));
    expect(bad[0]!.pod).toEqual(expect.any(String));
    expect(bad[0]!.time).toEqual(expect.any(String));
    const good = lines.filter((l) => String(l.requestId).startsWith('obs-apply-1'));
    expect(good.length).toBeGreaterThan(0);
    expect(good.every((l) => l.status === 200 && typeof l.durationMs === 'number' && typeof l.route === 'string' && !String(l.route).includes('web'))).toBe(true);
  }, 60_000);

  test('controller steps and graphile-worker log through it', async () => {
    const lines = await waitFor('a step that wrote', async () => logLines(), (ls) => ls.some((l) => l.component === 'controller' && l.msg === 'step' && Number(l.writes) > 0), 20_000);
    const step = lines.find((l) => l.component === 'controller' && Number(l.writes) > 0)!;
    expect(step).toMatchObject({ level: 'info', outcome: 'ok' });
    expect(step.controller).toEqual(expect.any(String));
    expect(step.durationMs).toEqual(expect.any(Number));
    expect(lines.some((l) => l.component === 'graphile-worker')).toBe(true);
  }, 30_000);

  test('no token, Authorization header or query value is ever logged', async () => {
    await fetch(`${pod.url}/v1/replicas/xyz?token=SEKRET-QUERY-VALUE`, { headers: { authorization: `Bearer ${ADMIN}` } });
    await fetch(`${pod.url}/v1/services`, { headers: { authorization: 'Bearer cca_admin_WRONG-TOKEN-VALUE' } });
    await waitFor('the two requests logged', async () => logLines().filter((l) => typeof l.route === 'string' && String(l.route).startsWith('/v1/')).length, (n) => n >= 4, 10_000);
    const all = pod.output();
    for (const secret of [ADMIN, JOIN, 'SEKRET-QUERY-VALUE', 'WRONG-TOKEN-VALUE', 'Bearer']) expect(all).not.toContain(secret);
    expect(all.toLowerCase()).not.toContain('authorization');
  }, 30_000);
});

describe('the server /metrics', () => {
  test('every named metric is there with plausible values after some traffic', async () => {
    // A job no worker takes (no task by that name): the queue gauges have something to show.
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    await c.query(`SELECT graphile_worker.add_job('cca-test-probe', json_build_object('controller', 'test-probe'), run_at => now() - interval '5 minutes')`);
    await c.end();
    const before = await scrape();
    // A watcher from revision 1 (behind the ring: a miss), then at the live edge (hits).
    const ac = new AbortController();
    const watching = fetch(`${pod.url}/v1/watch?prefix=&from=1`, { headers: { authorization: `Bearer ${ADMIN}` }, signal: ac.signal }).then(async (r) => {
      const reader = r.body!.getReader();
      while (!(await reader.read()).done);
    }).catch(() => undefined);
    const spec = join(tmp, 'more.cca');
    writeFileSync(spec, 'service more {\n  image    = "busybox:1.35"\n  replicas = 1\n  cpu      = 0.1\n  memory   = 16Mi\n}\n');
    expect((await cca(['apply', spec, '--yes'])).code).toBe(0);
    const after = await waitFor('the watcher to read at the live edge', scrape, (m) => total(m.samples, 'cca_watch_ring_hits_total') > 0 && total(m.samples, 'cca_watchers') >= 1, 15_000);
    ac.abort();
    await watching;
    const s = after.samples;
    expect(total(s, 'cca_http_requests_total')).toBeGreaterThan(total(before.samples, 'cca_http_requests_total'));
    expect(total(s, 'cca_http_request_duration_seconds_count')).toBeGreaterThan(0);
    expect(total(s, 'cca_store_revision')).toBeGreaterThan(0);
    expect(total(s, 'cca_store_commit_batch_size_count')).toBeGreaterThan(total(before.samples, 'cca_store_commit_batch_size_count'));
    expect(total(s, 'cca_store_commit_batch_size_sum')).toBeGreaterThanOrEqual(total(s, 'cca_store_commit_batch_size_count'));
    expect(total(s, 'cca_store_commit_duration_seconds_count')).toBe(total(s, 'cca_store_commit_batch_size_count'));
    // Every batch counted once by the way it went; a server's first writes (no lease) go from a snapshot.
    expect(total(s, 'cca_store_commit_batches_total')).toBe(total(s, 'cca_store_commit_batch_size_count'));
    expect(total(s, 'cca_store_commit_batches_total', { way: 'snapshot' })).toBeGreaterThan(0);
    expect(total(s, 'cca_store_pool_wait_seconds_count')).toBeGreaterThan(total(before.samples, 'cca_store_pool_wait_seconds_count'));
    expect(total(s, 'cca_watch_lag_revisions_count')).toBeGreaterThan(0);
    expect(total(s, 'cca_watch_ring_misses_total')).toBeGreaterThan(0);
    expect(total(s, 'cca_job_runs_total')).toBeGreaterThan(0);
    expect(total(s, 'cca_controller_step_duration_seconds_count')).toBeGreaterThan(0);
    // The steps read through the pod's read mirror, which holds the cluster's state.
    expect(total(s, 'cca_mirror_reads_total', { way: 'mirror' })).toBeGreaterThan(total(before.samples, 'cca_mirror_reads_total', { way: 'mirror' }));
    expect(total(s, 'cca_mirror_bytes')).toBeGreaterThan(1_000);
    expect(total(s, 'cca_jobs_waiting', { controller: 'test-probe' })).toBe(1);
    expect(total(s, 'cca_jobs_oldest_waiting_seconds', { controller: 'test-probe' })).toBeGreaterThan(290);
    expect(total(s, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(total(s, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(after.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
  }, 60_000);

  test('every metric deploy/grafana-dashboard.json queries (but the agent\'s) is in a real scrape: no drift', async () => {
    const { types } = await scrape();
    const names = dashboardMetrics().filter((n) => !n.startsWith('cca_agent_'));
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((n) => !types.has(n))).toEqual([]);
  });
});
