import { hostname } from 'node:os';
import { Etcd3 } from 'etcd3';
import { afterAll, expect, test } from 'vitest';
import { electionNamespace } from '../../db/etcd/election.js';
import { parseEtcdUrl } from '../../db/etcd/store.js';
import { waitFor } from '../support/wait.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { startTestEtcd } from '../support/etcd-server.js';
import { expectConverged, podApi as api, service, startPod, type Pod } from '../support/pods.js';
import { HttpTestAgent } from './http-agent.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const TTL = 3;

test('three pods on one etcd elect one driver; SIGKILL the leader mid-apply: another takes over within the lease TTL, converges, no duplicates', async () => {
  const etcd = await startTestEtcd({ fresh: true });
  cleanups.push(() => etcd.stop());
  const store = `etcd://${etcd.hostPort}/leader-test`;
  const pods: Pod[] = [];
  for (const n of ['a', 'b', 'c']) pods.push(await startPod(n, store, cleanups, ['--leader-ttl', String(TTL)]));
  const client = new Etcd3({ hosts: etcd.endpoints.split(',') });
  cleanups.push(async () => client.close());
  const election = client.namespace(electionNamespace(parseEtcdUrl(store).prefix)).election('driver');
  const leaderPod = async () => {
    const v = await election.leader().catch(() => undefined);
    return pods.find((p) => v === `${hostname()}/${p.child.pid}`);
  };

  const first = await waitFor('a leader among the pods', leaderPod, (p) => p !== undefined, 15_000);
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
  const s0 = await waitFor('s0 at 3 running', () => api(survivor, 'GET', '/v1/services/s0'), (r) => r.service?.running === 3, 20_000);
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
  const next = await waitFor('a new leader other than the killed one', leaderPod, (p) => p !== undefined && p !== victim, 20_000);
  const failoverMs = Date.now() - killedAt;
  expect(next).toBeDefined();
  expect(next).not.toBe(victim);
  console.log(`etcd leader election: pod ${victim.name} SIGKILLed; pod ${next!.name} leads after ${failoverMs} ms (lease TTL ${TTL} s)`);
  expect(failoverMs).toBeLessThan(TTL * 1000 + 2_000);

  expect(await expectConverged(survivor, 7)).toBe(21);
}, 120_000);
