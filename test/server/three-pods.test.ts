import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { eventually } from '../db/conformance.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { createTestDatabase } from '../support/databases.js';
import { freePort } from '../support/postgres-server.js';
import { HttpTestAgent } from './http-agent.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

interface Pod {
  name: string;
  url: string;
  child: ChildProcess;
}

async function startPod(name: string, dbUrl: string): Promise<Pod> {
  const port = await freePort();
  const store = `${dbUrl}${dbUrl.includes('?') ? '&' : '?'}application_name=pod-${name}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--store', store, '--port', String(port), '--workers', '2'], {
    env: { ...process.env, CCA_ADMIN_TOKEN: ADMIN, CCA_JOIN_TOKEN: JOIN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  cleanups.push(async () => void child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  const up = await eventually(
    () => fetch(`${url}/readyz`).then((r) => r.ok, () => false),
    (ok) => ok,
    30_000,
  );
  if (!up) throw new Error(`pod ${name} did not start:\n${out}`);
  return { name, url, child };
}

async function api(pod: Pod, method: string, path: string, body?: string) {
  const r = await fetch(`${pod.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'text/x-cca' } : {}) },
    ...(body ? { body } : {}),
  });
  return (await r.json()) as Record<string, any>;
}

const service = (i: number) => `service s${i} {\n  image = "busybox:1.35"\n  replicas = 3\n  cpu = 0.1\n  memory = 16Mi\n}\n`;

test('three pods on one Postgres: apply through one, read through another, SIGKILL the pod mid-step — converges, no duplicates, nothing lost', async () => {
  const db = await createTestDatabase('pods');
  cleanups.push(db.drop);
  const pods = [await startPod('a', db.url), await startPod('b', db.url), await startPod('c', db.url)];
  const [a, b] = pods as [Pod, Pod, Pod];
  const agents = ['n1', 'n2', 'n3'].map((n) => new HttpTestAgent(b.url, JOIN, n));
  for (const ag of agents) {
    await ag.start();
    cleanups.push(() => ag.stop());
  }
  // Watch for a pod holding an open transaction (a step in flight) while the applies land.
  const probe = new pg.Client({ connectionString: db.url });
  await probe.connect();
  cleanups.push(() => probe.end());
  let victim: Pod | undefined;
  const hunting = (async () => {
    const until = Date.now() + 20_000;
    while (!victim && Date.now() < until) {
      const r = await probe.query<{ app: string }>(
        `SELECT application_name AS app FROM pg_stat_activity
          WHERE datname = current_database() AND application_name IN ('pod-a', 'pod-c') AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
          LIMIT 1`,
      );
      const app = r.rows[0]?.app;
      if (app) {
        victim = pods.find((p) => `pod-${p.name}` === app);
        victim?.child.kill('SIGKILL');
      }
    }
  })();
  for (let i = 0; i < 12; i++) {
    // An apply in flight on the pod that dies has an unknown outcome: applying the same
    // spec again through a survivor is safe (an unchanged spec writes nothing).
    const r = await api(victim === a ? b : a, 'POST', '/v1/apply', service(i)).catch(() => api(b, 'POST', '/v1/apply', service(i)));
    expect(r.plan).toBeDefined();
  }
  await hunting;
  expect(victim, 'no pod was caught mid-step').toBeDefined();
  console.log(`three pods: SIGKILLed pod ${victim?.name} while it held a step's transaction`);

  // Every applied write is there, read through a surviving pod, and converges: 3 running each.
  const survivor = pods.find((p) => p !== victim && p !== a) ?? b;
  const all = await eventually(
    () => api(survivor, 'GET', '/v1/services'),
    (r) => r.services?.length === 12 && r.services.every((s: { running: number }) => s.running === 3),
    45_000,
  );
  expect(all.services.map((s: { name: string; running: number }) => [s.name, s.running]).sort()).toEqual(
    Array.from({ length: 12 }, (_, i) => [`s${i}`, 3]).sort(),
  );
  // No duplicates: each replica placed once, each service exactly its count of live replicas.
  const replicas = (await api(survivor, 'GET', '/v1/replicas')).replicas as { id: string; service: string; node?: string; state: string }[];
  const live = replicas.filter((r) => r.state === 'running');
  expect(new Set(live.map((r) => r.id)).size).toBe(live.length);
  expect(live.length).toBe(36);
  const assigned = await probe.query<{ n: number; distinct_replicas: number }>(
    `SELECT count(*)::int AS n, count(DISTINCT split_part(key, '/', 4))::int AS distinct_replicas FROM cca_kv WHERE key LIKE '/assigned/%'`,
  );
  expect(assigned.rows[0]!.n).toBe(assigned.rows[0]!.distinct_replicas);
  // Allocations match assignments: the auditor would say the same.
  const nodes = (await api(survivor, 'GET', '/v1/nodes')).nodes as { name: string; replicas: number; used: { cpuMillis: number } }[];
  expect(nodes.reduce((s, n) => s + n.replicas, 0)).toBe(assigned.rows[0]!.n);
  for (const n of nodes) expect(n.used.cpuMillis).toBe(n.replicas * 100);
}, 120_000);
