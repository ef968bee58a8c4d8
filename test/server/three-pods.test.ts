import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { JOIN } from '../handlers/harness.js';
import { createTestDatabase } from '../support/databases.js';
import { expectConverged, podApi as api, service, startPod, type Pod } from '../support/pods.js';
import { HttpTestAgent } from './http-agent.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** The pod's connections carry its name (steps run on NAME-jobs), so the test can see which pod holds a transaction. */
const pgStore = (dbUrl: string, name: string) => `${dbUrl}${dbUrl.includes('?') ? '&' : '?'}application_name=pod-${name}`;

test('three pods on one Postgres: apply through one, read through another, SIGKILL the pod mid-step — converges, no duplicates, nothing lost', async () => {
  const db = await createTestDatabase('pods');
  cleanups.push(db.drop);
  const pods: Pod[] = [];
  for (const n of ['a', 'b', 'c']) pods.push(await startPod(n, pgStore(db.url, n), cleanups));
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
          WHERE datname = current_database() AND application_name IN ('pod-a-jobs', 'pod-c-jobs') AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
          LIMIT 1`,
      );
      const app = r.rows[0]?.app;
      if (app) {
        victim = pods.find((p) => `pod-${p.name}-jobs` === app);
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
  const placed = await expectConverged(survivor, 12);
  const assigned = await probe.query<{ n: number; distinct_replicas: number }>(
    `SELECT count(*)::int AS n, count(DISTINCT split_part(key, '/', 4))::int AS distinct_replicas FROM cca_kv WHERE key LIKE '/assigned/%'`,
  );
  expect(assigned.rows[0]!.n).toBe(assigned.rows[0]!.distinct_replicas);
  // Allocations match assignments: the auditor would say the same.
  expect(placed).toBe(assigned.rows[0]!.n);
}, 120_000);
