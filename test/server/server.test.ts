import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { startServer, type RunningServer } from '../../server/start.js';
import { waitFor } from '../support/wait.js';
import { createTestDatabase } from '../support/databases.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { HttpTestAgent } from './http-agent.js';
import { startTestEtcd } from '../support/etcd-server.js';
import { postgresEvidence, recentLog, withEvidence } from '../support/pod-evidence.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const spec = `service web {
  image    = "busybox:1.35"
  command  = ["httpd", "-f", "-p", "8080"]
  replicas = 3
  cpu      = 0.25
  memory   = 64Mi
}
`;

async function api(server: RunningServer, method: string, path: string, body?: string) {
  const r = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'text/x-cca' } : {}) },
    ...(body ? { body } : {}),
  });
  return (await r.json()) as Record<string, any>;
}

const backends: [string, () => Promise<string>][] = [
  ['memory', async () => 'memory:'],
  [
    'sqlite (in-process driver)',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cca-server-sqlite-'));
      cleanups.unshift(async () => rmSync(dir, { recursive: true, force: true }));
      return `sqlite:${join(dir, 'store.db')}`;
    },
  ],
  [
    'etcd (in-process driver)',
    async () => {
      const etcd = await startTestEtcd();
      cleanups.push(() => etcd.stop());
      return `etcd://${etcd.hostPort}/server-test`;
    },
  ],
  [
    'postgres (graphile-worker jobs)',
    async () => {
      const db = await createTestDatabase('server');
      cleanups.push(db.drop);
      return db.url;
    },
  ],
];

describe.each(backends)('a server pod on %s', (_name, storeUrl) => {
  test('apply → placed → running on agents; a crashed replica is replaced with a new id; delete stops everything', async () => {
    const store = await storeUrl();
    const recent = recentLog();
    const server = await startServer({ store, log: recent.log, port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    // A timed-out wait says what the pod was doing: its newest log lines and, on Postgres, its jobs and sessions.
    const evidence = async () => [...(store.startsWith('postgres') ? [await postgresEvidence(store)] : []), 'pod log (newest last):', ...recent.lines().slice(-80)].join('\n');
    cleanups.push(() => server.stop());
    const agents = [new HttpTestAgent(server.url, JOIN, 'n1'), new HttpTestAgent(server.url, JOIN, 'n2', 'b')];
    for (const a of agents) {
      await a.start();
      cleanups.push(() => a.stop());
    }
    const applied = await api(server, 'POST', '/v1/apply', spec);
    expect(applied.plan.added).toEqual(['web']);
    const running = await withEvidence(waitFor('web at 3 running', () => api(server, 'GET', '/v1/services/web'), (r) => r.service?.running === 3, 20_000), evidence);
    expect(running.service).toMatchObject({ desired: 3, replicas: 3, placed: 3, running: 3 });

    const before = (await api(server, 'GET', '/v1/replicas?service=web')).replicas as { id: string; node: string }[];
    const victim = before[0]!;
    agents.find((a) => a.node === victim.node)!.crashed.add(victim.id);
    const replaced = await withEvidence(
      waitFor('the killed replica replaced (3 others running)',
        () => api(server, 'GET', '/v1/replicas?service=web'),
        (r) => (r.replicas as { id: string; state: string }[]).filter((x) => x.state === 'running' && x.id !== victim.id).length === 3,
        20_000,
      ),
      evidence,
    );
    const ids = (replaced.replicas as { id: string; state: string }[]).filter((x) => x.state === 'running').map((x) => x.id);
    expect(ids).not.toContain(victim.id);
    const why = await api(server, 'GET', `/v1/why/replica/${ids.find((id) => !before.some((b) => b.id === id))}`);
    expect(why.complete).toBe(true);
    expect(why.chain.length).toBeGreaterThanOrEqual(1);

    await api(server, 'DELETE', '/v1/services/web');
    const gone = await withEvidence(waitFor('every replica of web gone', () => api(server, 'GET', '/v1/replicas?service=web'), (r) => r.replicas.length === 0, 20_000), evidence);
    expect(gone.replicas).toEqual([]);
  }, 60_000);
});

test('a second pod on the same SQLite file refuses to run the controllers (CCA-E0125); with --workers 0 it serves the API', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cca-server-sqlite2-'));
  cleanups.unshift(async () => rmSync(dir, { recursive: true, force: true }));
  const store = `sqlite:${join(dir, 'store.db')}`;
  const base = { store, port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, version: 'test' };
  const first = await startServer({ ...base, workers: 2 });
  cleanups.push(() => first.stop());
  const err = await startServer({ ...base, workers: 2 }).then(
    (s) => s.stop().then(() => 'started'),
    (e: unknown) => e,
  );
  expect(isCcaError(err) && err.code).toBe('CCA-E0125');
  const reader = await startServer({ ...base, workers: 0 });
  cleanups.push(() => reader.stop());
  await api(first, 'POST', '/v1/apply', spec);
  const seen = await waitFor('the reader pod to see web at desired 3', () => api(reader, 'GET', '/v1/services/web'), (r) => r.service?.desired === 3, 20_000);
  expect(seen.service).toMatchObject({ desired: 3 });
  // Once the driver's pod stops, another may take over.
  await first.stop();
  const next = await startServer({ ...base, workers: 2 });
  cleanups.push(() => next.stop());
}, 60_000);
