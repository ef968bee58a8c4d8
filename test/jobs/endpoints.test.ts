import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { replicaReason } from '../../core/model/replica-outcome.js';
import type { Observation } from '../../core/model/facts.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import type { Store, TxnRequest } from '../../db/store.js';
import { auditor, endpointController, nodeController, readyCount, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { readAllCited } from '../../jobs/decisions/cited.js';
import { why, whyText } from '../../jobs/decisions/why.js';
import { Bench } from './harness.js';

const node = nodeController({ lostGraceMs: 1_000 });
const placing = [replicaController, scheduler, node, auditor];
const all = [...placing, endpointController];

const readiness = { probe: { type: 'http' as const, path: '/ready', port: 'http' }, intervalMs: 2_000, timeoutMs: 1_000 };
const web = (replicas: number, extra: Partial<ServiceSpecInput> = {}): ServiceSpecInput => ({
  name: 'web',
  image: 'web:1',
  replicas,
  ports: [{ name: 'http', container: 8080 }],
  ...extra,
});

async function cluster(nodes: string[] = ['n1', 'n2']) {
  const b = new Bench();
  for (const [i, n] of nodes.entries()) await b.register(n, ['a', 'b', 'c'][i % 3]);
  await b.settle(all);
  return b;
}

/** What an agent reports: running, with health and where the replica is reached. */
async function report(b: Bench, replica: string, o: Partial<Observation> = {}): Promise<void> {
  const a = (await b.assignments()).find((x) => x.replica === replica)!;
  const tenure = o.tenure ?? (await b.store.get(buildKey('node', a.node)))!.createRevision;
  const obs: Observation = {
    replica,
    service: a.service,
    node: a.node,
    tenure,
    state: 'running',
    restarts: 0,
    health: { liveness: 'unknown', readiness: 'unknown' },
    image: '',
    address: `127.0.0.${a.node.slice(1)}`,
    ports: { http: 8080 },
    at: b.t,
    ...o,
  };
  await b.store.put(buildKey('observed', a.node, replica), encodeFact('observed', obs));
}

async function endpoints(b: Bench, service = 'web') {
  const kv = await b.store.get(buildKey('endpoints', service));
  return kv ? decodeFact('endpoints', kv.key, kv.value) : undefined;
}

const ids = async (b: Bench) => ((await endpoints(b))?.endpoints ?? []).map((e) => e.replica);

describe('endpoint controller', () => {
  test('running replicas of a service without a readiness check join with their address and ports; converged writes nothing', async () => {
    const b = await cluster();
    await b.apply(web(2));
    await b.settle(all);
    const live = await b.live('web');
    expect(await endpoints(b)).toBeUndefined(); // nothing running yet: nothing published
    for (const r of live) await report(b, r.id);
    await b.settle(all);
    const e = await endpoints(b);
    expect(e?.endpoints).toHaveLength(2);
    expect(readyCount(e)).toBe(2);
    const byNode = Object.fromEntries(e!.endpoints.map((x) => [x.node, x]));
    expect(byNode.n1).toMatchObject({ address: '127.0.0.1', ports: { http: 8080 } });
    expect(byNode.n2).toMatchObject({ address: '127.0.0.2', ports: { http: 8080 } });
    // Converged: another round of every step writes nothing.
    const rev = await b.store.revision();
    for (const s of await endpointController.subjects!(b.store)) await b.step(endpointController, s);
    for (const c of all) for (const s of (await c.subjects?.(b.store)) ?? [undefined]) await b.step(c, s);
    expect(await b.store.revision()).toBe(rev);
    const answer = await why(b.store, 'service', 'web');
    expect(answer.complete).toBe(true);
    expect(answer.chain[0]!.decision.controller).toBe('endpoints');
    expect(answer.chain[0]!.decision.reasons.join('\n')).toMatch(/joined: running .* on n\d at 127\.0\.0\.\d \(http 8080\)/);
  });

  test('with a readiness check: unknown and failing stay out, passing joins, failing leaves with a decision naming the probe', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(2, { health: { readiness } }));
    await b.settle(all);
    const [r1, r2] = (await b.live('web')).map((r) => r.id);
    await report(b, r1!);
    await report(b, r2!, { health: { liveness: 'unknown', readiness: 'failing' } });
    await b.settle(all);
    expect(await ids(b)).toEqual([]);
    b.t += 1_000;
    await report(b, r1!, { health: { liveness: 'unknown', readiness: 'passing' } });
    await b.step(endpointController, 'web');
    expect(await ids(b)).toEqual([r1]);
    b.t += 1_000;
    await report(b, r2!, { health: { liveness: 'unknown', readiness: 'passing' } });
    await b.step(endpointController, 'web');
    expect(await ids(b)).toEqual([r1, r2].sort());
    b.t += 1_000;
    await report(b, r1!, { health: { liveness: 'unknown', readiness: 'failing' } });
    await b.step(endpointController, 'web'); // one step after the report
    expect(await ids(b)).toEqual([r2]);
    const answer = await why(b.store, 'service', 'web');
    const d = answer.chain[0]!.decision;
    expect(d.action).toBe('endpoints changed: 1 ready');
    expect(d.reasons).toEqual([`${r1} is out: readiness failing (http /ready on http) on n1`]);
    expect(answer.complete).toBe(true);
    expect(answer.terminal?.fact).toBe(buildKey('observed', 'n1', r1!));
    expect(d.evidence.some((e) => e.key === buildKey('observed', 'n1', r1!) && e.value.includes('"failing"'))).toBe(true);
    expect(whyText(answer)).toContain('readiness failing');
    // The replica is not restarted for failing readiness: same ids, still live.
    await b.settle(all);
    expect((await b.live('web')).map((r) => r.id).sort()).toEqual([r1, r2].sort());
  });

  test("a lost node's replicas leave at once: the lease expiry alone takes them out, before the node controller acts", async () => {
    const b = await cluster(['n1', 'n2']);
    await b.apply(web(2));
    await b.settle(all);
    for (const r of await b.live('web')) await report(b, r.id);
    await b.settle(all);
    expect(await ids(b)).toHaveLength(2);
    const onN2 = (await b.assignments('n2')).map((a) => a.replica);
    await b.store.revokeLease(b.leases.get('n2')!); // as if it expired
    await b.step(endpointController, 'web'); // the very next endpoint step
    expect(await ids(b)).toEqual((await b.assignments('n1')).map((a) => a.replica));
    expect((await ids(b)).some((r) => onN2.includes(r))).toBe(false);
    const d = (await why(b.store, 'service', 'web')).chain[0]!.decision;
    expect(d.reasons[0]).toMatch(/left: node n2 ended tenure \d+ \(its registration lease expired\)/);
    // Once the node controller marks it lost, citing that decision keeps the chain complete.
    await b.settle(all);
    expect((await why(b.store, 'service', 'web')).complete).toBe(true);
  });

  test('a node marked lost (status) takes its replicas out even while its registration still exists', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(1));
    await b.settle(all);
    const [r] = await b.live('web');
    await report(b, r!.id);
    await b.settle(all);
    expect(await ids(b)).toEqual([r!.id]);
    const st = (await b.fact('nodeStatus', 'n1'))!;
    await b.store.put(buildKey('nodeStatus', 'n1'), encodeFact('nodeStatus', { ...st, state: 'cordoned', since: b.t }));
    await b.step(endpointController, 'web');
    expect(await ids(b)).toEqual([]);
    expect((await why(b.store, 'service', 'web')).chain[0]!.decision.reasons[0]).toContain('node n1 is cordoned');
  });

  test('an observation from another tenure is not admissible: it never joins', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(1));
    await b.settle(all);
    const [r] = await b.live('web');
    await report(b, r!.id, { tenure: 999 });
    await b.settle(all);
    expect(await endpoints(b)).toBeUndefined();
    await report(b, r!.id);
    await b.settle(all);
    expect(await ids(b)).toEqual([r!.id]);
  });

  test('a replica being scaled down leaves when the replica controller stops it, before it exits', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(2, { stopGraceMs: 5_000 }));
    await b.settle(all);
    for (const r of await b.live('web')) await report(b, r.id);
    await b.settle(all);
    expect(await ids(b)).toHaveLength(2);
    b.t += 1;
    await b.apply(web(1, { stopGraceMs: 5_000 }));
    await b.step(replicaController, 'web');
    const stopping = (await b.replicas('web')).find((r) => r.desired === 'stop')!;
    await b.step(endpointController, 'web');
    expect(await ids(b)).not.toContain(stopping.id);
    expect(await ids(b)).toHaveLength(1);
    const answer = await why(b.store, 'service', 'web');
    expect(answer.chain[0]!.decision.reasons[0]).toContain(`${stopping.id} left: the replica controller is stopping it`);
    expect(answer.chain[1]?.decision.subject).toBe(stopping.id); // the chain goes on through the stop decision
    expect(answer.complete).toBe(true);
  });

  test('a liveness-failing or exited replica is out, a deleted service has its endpoints withdrawn', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(2));
    await b.settle(all);
    const [r1, r2] = (await b.live('web')).map((r) => r.id);
    await report(b, r1!);
    await report(b, r2!, { health: { liveness: 'failing', readiness: 'unknown' } });
    await b.step(endpointController, 'web');
    expect(await ids(b)).toEqual([r1]);
    await b.store.delete(buildKey('service', 'web'));
    expect(await endpointController.subjects!(b.store)).toEqual(['web']);
    await b.step(endpointController, 'web');
    expect(await endpoints(b)).toBeUndefined();
    expect((await why(b.store, 'service', 'web')).chain[0]!.decision.action).toBe('endpoints withdrawn');
  });

  test('host networking: a report without an address is reached at the node’s declared address, ports from the spec', async () => {
    const b = new Bench();
    const { id } = await b.store.grantLease(10);
    await b.store.put(buildKey('node', 'n1'), encodeFact('node', { name: 'n1', address: '127.0.5.5', capacity: { cpuMillis: 4_000, memoryBytes: 1 << 30 }, images: { 'web:1': 'x' } }), { lease: id });
    await b.settle(all);
    await b.apply(web(1));
    await b.settle(all);
    const [r] = await b.live('web');
    const a = (await b.assignments())[0]!;
    await b.store.put(
      buildKey('observed', 'n1', r!.id),
      encodeFact('observed', { replica: r!.id, service: 'web', node: 'n1', tenure: a.tenure, state: 'running', at: b.t }),
    );
    await b.step(endpointController, 'web');
    expect((await endpoints(b))!.endpoints).toEqual([{ replica: r!.id, node: 'n1', address: '127.0.5.5', ports: { http: 8080 } }]);
  });

  test('read-set rule: an observation that changes between the read and the write makes the step write nothing', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(1, { health: { readiness } }));
    await b.settle(all);
    const [r] = await b.live('web');
    await report(b, r!.id, { health: { liveness: 'unknown', readiness: 'passing' } });
    // The agent reports "failing" while the step is deciding: its txn must not publish "passing".
    const racing: Store = new Proxy(b.store, {
      get(target, prop, receiver) {
        if (prop === 'txn') {
          return async (req: TxnRequest) => {
            await report(b, r!.id, { health: { liveness: 'unknown', readiness: 'failing' } });
            return target.txn(req);
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const wake = await endpointController.reconcile({ store: racing, now: b.t, random: () => 0.5, subject: 'web' });
    expect(await endpoints(b)).toBeUndefined();
    expect(wake.at).toBeGreaterThan(b.t);
    await b.step(endpointController, 'web');
    expect(await endpoints(b)).toBeUndefined(); // failing: still nothing to publish
  });

  test('read-set rule, the other side: a member that stays may re-report (usage) meanwhile without failing the step', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(2));
    await b.settle(all);
    const [r1, r2] = (await b.live('web')).map((r) => r.id);
    await report(b, r1!);
    await b.settle(all);
    expect(await ids(b)).toEqual([r1]);
    await report(b, r2!);
    const racing: Store = new Proxy(b.store, {
      get(target, prop, receiver) {
        if (prop === 'txn') {
          return async (req: TxnRequest) => {
            await report(b, r1!, { usage: { cpuMillis: 7, memoryBytes: 1 } });
            return target.txn(req);
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const wake = await endpointController.reconcile({ store: racing, now: b.t, random: () => 0.5, subject: 'web' });
    expect(wake.at).toBeUndefined();
    expect(await ids(b)).toEqual([r1, r2].sort());
  });

  test('a large change goes out as a chain of txns that each fit (leaves first), in one step', async () => {
    const b = await cluster(['n1', 'n2', 'n3']);
    await b.apply(web(40, { resources: { cpuMillis: 10, memoryBytes: 1 << 20 } }));
    await b.settle(all);
    const live = await b.live('web');
    expect(live).toHaveLength(40);
    for (const r of live) await report(b, r.id);
    const before = await b.store.revision();
    expect((await b.step(endpointController, 'web')).at).toBeUndefined();
    expect(await ids(b)).toHaveLength(40);
    // Two links: joins go in node order, a node's registration and status compared once for
    // all its joins (6 compares for its first, 4 for each next), so the first link takes two
    // nodes' worth and more (a link compares at most 128 keys), the second the rest.
    expect(await b.store.revision()).toBe(before + 2);
    const links = (await why(b.store, 'service', 'web')).history.slice(0, 2).map((l) => l.decision);
    const firstLink = Number(/^endpoints changed: (\d+) ready$/.exec(links[1]!.action)?.[1]);
    expect(firstLink).toBeGreaterThan(26);
    expect(links[0]!.action).toBe('endpoints changed: 40 ready');
    // Each decision cites every join it made (the set as read, then each replica's record and
    // observation), none clipped, and words one reason per node.
    expect(links[1]!.evidence).toHaveLength(1 + 2 * firstLink);
    expect(links[0]!.evidence).toHaveLength(1 + 2 * (40 - firstLink));
    for (const d of links) expect(d.reasons.join('; ').match(/ joined: /g)).toHaveLength(d === links[1] ? firstLink : 40 - firstLink);
    // A reason holds the joins of one node (as many as fit its 1,024 characters).
    for (const r of links.flatMap((d) => d.reasons)) expect(new Set(r.match(/ on n\d /g))).toHaveLength(1);
    expect(links[1]!.reasons.length).toBeLessThan(links[1]!.evidence.length / 4);
    // Link 2 cites the set link 1 wrote, as it was written (hashed from the value stored).
    const evidence = (await why(b.store, 'service', 'web')).history.flatMap((h) => h.decision.evidence);
    const cited = (await readAllCited(b.store, evidence)).filter((c) => c.key === buildKey('endpoints', 'web'));
    expect(cited.length).toBeGreaterThanOrEqual(1);
    expect(cited.map((c) => c.state)).toEqual(cited.map(() => 'retained'));
    // Twenty leave and a new replica joins: the leaves go out first.
    for (const r of live.slice(0, 20)) await report(b, r.id, { state: 'exited', exitCode: 1 });
    await b.settle(placing);
    b.t += 1_000; // replacements of failed replicas are placed after their backoff (docs/ordering.md)
    await b.settle(placing);
    const fresh = (await b.live('web')).filter((r) => !live.some((x) => x.id === r.id));
    expect(fresh.length).toBeGreaterThan(0);
    for (const r of fresh) await report(b, r.id);
    const at = await b.store.revision();
    await b.step(endpointController, 'web');
    const first = (await b.store.range({ prefix: '/decisions/service/web/' })).kvs.filter((kv) => kv.modRevision === at + 1).map((kv) => JSON.parse(kv.value) as { reasons: string[] })[0]!;
    // The first link takes every leave, then joins (if it has room): no join before a leave.
    const whys = first.reasons.join('; ').split('; ');
    const leaves = whys.filter((r) => r.includes(' left:') || r.includes(' is out:'));
    expect(leaves).toHaveLength(20);
    expect(whys.slice(0, 20)).toEqual(leaves);
    expect(await ids(b)).toHaveLength(40);
  });

  test('subjects: a node change wakes every service; a replica key wakes its own service', () => {
    expect(endpointController.subjectOf!(buildKey('observed', 'n1', 'web-abcdefgh'))).toBe('web');
    expect(endpointController.subjectOf!(buildKey('assigned', 'n1', 'api-abcdefgh'))).toBe('api');
    expect(endpointController.subjectOf!(buildKey('node', 'n1'))).toBeUndefined();
    expect(endpointController.subjectOf!(buildKey('nodeStatus', 'n1'))).toBeUndefined();
    expect(readyCount(undefined)).toBe(0);
  });
});

describe('liveness failures in the replica controller', () => {
  test('a replica the agent stopped for liveness (failed, exit 0, CCA-E0513) is replaced under on-failure, the decision quoting the reason', async () => {
    const b = await cluster(['n1']);
    await b.apply(web(1, { restart: 'on-failure' }));
    await b.settle(all);
    const [r] = await b.live('web');
    await report(b, r!.id);
    await b.settle(all);
    const message = `liveness failed: http GET /livez on port 8080 did not pass 3 time(s) in a row, so the agent stopped replica ${r!.id}`;
    await report(b, r!.id, { state: 'failed', exitCode: 0, health: { liveness: 'failing', readiness: 'unknown' }, diagnostic: { code: 'CCA-E0513', message } });
    await b.settle(all);
    const [next] = await b.live('web');
    expect(next!.id).not.toBe(r!.id);
    expect(next!.replaces).toEqual({ replica: r!.id, ended: { outcome: 'restarted', node: 'n1', exit: { state: 'failed', code: 0, restart: 'on-failure', message } } });
    expect(replicaReason(next!)).toBe(`replaces ${r!.id} (failed with code 0 on n1 (restart on-failure): ${message})`);
    const answer = await why(b.store, 'replica', r!.id);
    expect(answer.history.some((l) => l.decision.action === `retired: failed with code 0 on n1 (restart on-failure): ${message}`)).toBe(true);
    expect(await ids(b)).toEqual([]); // out of the endpoints the moment it was reported failed
  });
});
