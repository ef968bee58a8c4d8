import { spawn, type ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { Etcd3 } from 'etcd3';
import { afterAll, expect, test } from 'vitest';
import { electionNamespace } from '../../db/etcd/election.js';
import { parseEtcdUrl } from '../../db/etcd/store.js';
import { eventually } from '../db/conformance.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { startTestEtcd } from '../support/etcd-server.js';
import { freePort } from '../support/postgres-server.js';
import { HttpTestAgent } from './http-agent.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const TTL = 3;

interface Pod {
  name: string;
  url: string;
  child: ChildProcess;
}

async function startPod(name: string, store: string): Promise<Pod> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'server/main.ts', '--store', store, '--port', String(port), '--workers', '2', '--leader-ttl', String(TTL)],
    { env: { ...process.env, CCA_ADMIN_TOKEN: ADMIN, CCA_JOIN_TOKEN: JOIN }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  cleanups.push(async () => void child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  const up = await eventually(() => fetch(`${url}/readyz`).then((r) => r.ok, () => false), (ok) => ok, 30_000);
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

test('three pods on one etcd elect one driver; SIGKILL the leader mid-apply: another takes over within the lease TTL, converges, no duplicates', async () => {
  const etcd = await startTestEtcd({ fresh: true });
  cleanups.push(() => etcd.stop());
  const store = `etcd://${etcd.hostPort}/leader-test`;
  const pods = [await startPod('a', store), await startPod('b', store), await startPod('c', store)];
  const client = new Etcd3({ hosts: etcd.endpoints.split(',') });
  cleanups.push(async () => client.close());
  const election = client.namespace(electionNamespace(parseEtcdUrl(store).prefix)).election('driver');
  const leaderPod = async () => {
    const v = await election.leader().catch(() => undefined);
    return pods.find((p) => v === `${hostname()}/${p.child.pid}`);
  };

  const first = await eventually(leaderPod, (p) => p !== undefined, 15_000);
  expect(first).toBeDefined();
  const victim = first!;
  const survivor = pods.find((p) => p !== victim)!;
  const agents = ['n1', 'n2', 'n3'].map((n) => new HttpTestAgent(survivor.url, JOIN, n));
  for (const ag of agents) {
    await ag.start();
    cleanups.push(() => ag.stop());
  }
  // The leader's driver works: a first service converges.
  await api(survivor, 'POST', '/v1/apply', service(0));
  const s0 = await eventually(() => api(survivor, 'GET', '/v1/services/s0'), (r) => r.service?.running === 3, 20_000);
  expect(s0.service.running).toBe(3);
  // Exactly one pod ran controller steps: the leader.
  const steps = async (p: Pod) => {
    const text = await (await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    return [...text.matchAll(/^cca_job_runs_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
  };
  expect(await steps(victim)).toBeGreaterThan(0);
  for (const p of pods.filter((p) => p !== victim)) expect(await steps(p)).toBe(0);

  // Mid-apply: the applies land while the leader's driver is placing, then it dies.
  for (let i = 1; i <= 6; i++) await api(survivor, 'POST', '/v1/apply', service(i));
  victim.child.kill('SIGKILL');
  const killedAt = Date.now();
  const next = await eventually(leaderPod, (p) => p !== undefined && p !== victim, 20_000);
  const failoverMs = Date.now() - killedAt;
  expect(next).toBeDefined();
  expect(next).not.toBe(victim);
  console.log(`etcd leader election: pod ${victim.name} SIGKILLed; pod ${next!.name} leads after ${failoverMs} ms (lease TTL ${TTL} s)`);
  expect(failoverMs).toBeLessThan(TTL * 1000 + 2_000);

  const all = await eventually(
    () => api(survivor, 'GET', '/v1/services'),
    (r) => r.services?.length === 7 && r.services.every((s: { running: number }) => s.running === 3),
    45_000,
  );
  expect(all.services.map((s: { name: string; running: number }) => [s.name, s.running]).sort()).toEqual(
    Array.from({ length: 7 }, (_, i) => [`s${i}`, 3]).sort(),
  );
  const replicas = (await api(survivor, 'GET', '/v1/replicas')).replicas as { id: string; state: string }[];
  const live = replicas.filter((r) => r.state === 'running');
  expect(new Set(live.map((r) => r.id)).size).toBe(live.length);
  expect(live.length).toBe(21);
  const nodes = (await api(survivor, 'GET', '/v1/nodes')).nodes as { name: string; replicas: number; used: { cpuMillis: number } }[];
  expect(nodes.reduce((s, n) => s + n.replicas, 0)).toBe(21);
  for (const n of nodes) expect(n.used.cpuMillis).toBe(n.replicas * 100);
}, 120_000);
