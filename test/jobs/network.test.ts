import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import type { Store } from '../../db/store.js';
import { auditor, networkController, nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { describeAddresses, planAddresses } from '../../jobs/controllers/network.js';
import { ruleSets, type ResolvedRules } from '../../jobs/sim/story-network.js';
import { listFacts } from '../../jobs/facts.js';
import { Bench } from './harness.js';

const node = nodeController({ lostGraceMs: 1_000 });
const all = [replicaController, scheduler, node, auditor, networkController];
const small = { cpuMillis: 100, memoryBytes: 64 * 1024 ** 2 };

const db = (allow: ServiceSpecInput['network'] = { allow: [{ service: 'api', port: 'pg' }] }): ServiceSpecInput => ({
  name: 'db',
  image: 'web:1',
  replicas: 1,
  resources: small,
  ports: [{ name: 'pg', container: 5432 }],
  network: allow,
});

/** Play the agents: every assigned replica reports running with an address of its own. */
async function observeAll(b: Bench, addresses: Map<string, string>): Promise<void> {
  for (const a of await listFacts(b.store, 'assigned', prefixOf('assigned'))) {
    const { replica, service, node: n, tenure } = a.value;
    const key = buildKey('observed', n, replica);
    if (await b.store.get(key)) continue;
    if (!addresses.has(replica)) addresses.set(replica, `10.88.0.${addresses.size + 2}`);
    await b.store.put(key, encodeFact('observed', { replica, service, node: n, tenure, state: 'running', address: addresses.get(replica)!, at: b.t }));
  }
}

/** The node's rule set as its agent resolves it (its rule set, the policies, the address sets). */
async function rules(b: Bench, n = 'n1'): Promise<ResolvedRules | undefined> {
  return (await ruleSets(b.store)).find((r) => r.node === n);
}

async function setup() {
  const b = new Bench();
  await b.register('n1');
  await b.apply(db());
  await b.apply({ name: 'api', image: 'web:1', replicas: 2, resources: small });
  await b.apply({ name: 'other', image: 'web:1', replicas: 1, resources: small });
  await b.settle(all);
  const addresses = new Map<string, string>();
  await observeAll(b, addresses);
  await b.settle(all);
  return { b, addresses };
}

const addressesOf = async (b: Bench, service: string, addresses: Map<string, string>) =>
  (await b.live(service)).map((r) => addresses.get(r.id)!).filter(Boolean).sort();

describe('network controller', () => {
  test('a policed replica admits exactly the current addresses of its allowed clients; others are open', async () => {
    const { b, addresses } = await setup();
    const r = (await rules(b))!;
    const dbRep = r.replicas.find((x) => x.service === 'db')!;
    expect(dbRep.policy).toBe('allow');
    expect(dbRep.rules).toEqual([{ port: 5432, protocol: 'tcp', services: ['api'], from: await addressesOf(b, 'api', addresses) }]);
    expect(dbRep.rules[0]!.from).toHaveLength(2);
    expect(r.replicas.filter((x) => x.service !== 'db').every((x) => x.policy === 'open' && x.rules.length === 0)).toBe(true);
    expect(r.replicas).toHaveLength(4);
    // The write came with a decision naming what changed.
    const decisions = await listFacts(b.store, 'decision', prefixOf('decision', 'node', 'n1'));
    const net = decisions.filter((d) => d.value.controller === 'network');
    expect(net.length).toBeGreaterThan(0);
    expect(net.some((d) => d.value.reasons.some((x) => x.includes('default deny') && x.includes('the policy of db')))).toBe(true);
    // The addresses are one set per client service, not copied into the node's rule set.
    const setKv = (await b.store.get(buildKey('netAddrs', 'api')))!;
    const set = decodeFact('netAddrs', setKv.key, setKv.value);
    expect(set.addresses).toEqual(await addressesOf(b, 'api', addresses));
    expect((await b.store.get(buildKey('network', 'n1')))!.value).not.toContain(set.addresses[0]!);
    const apiDecisions = await listFacts(b.store, 'decision', prefixOf('decision', 'service', 'api'));
    expect(apiDecisions.some((d) => d.value.action === 'address set updated' && d.value.reasons.some((x) => x.startsWith('api: 2 address(es) (+')))).toBe(true);
    // Converged: another round writes nothing.
    const rev = await b.store.revision();
    await b.step(networkController);
    expect(await b.store.revision()).toBe(rev);
  });

  test('a replaced client leaves the allowance in the step that sees its exit; its replacement joins', async () => {
    const { b, addresses } = await setup();
    const [victim] = (await b.live('api')).map((r) => r.id);
    const oldAddress = addresses.get(victim!)!;
    b.t += 1_000;
    const a = (await listFacts(b.store, 'assigned', prefixOf('assigned', 'n1'))).find((x) => x.value.replica === victim)!;
    await b.store.put(buildKey('observed', 'n1', victim!), encodeFact('observed', { replica: victim!, service: 'api', node: 'n1', tenure: a.value.tenure, state: 'exited', exitCode: 137, address: oldAddress, at: b.t }));
    await b.step(networkController);
    expect((await rules(b))!.replicas.find((x) => x.service === 'db')!.rules[0]!.from).not.toContain(oldAddress);
    await b.settle(all);
    await observeAll(b, addresses);
    await b.settle(all);
    const from = (await rules(b))!.replicas.find((x) => x.service === 'db')!.rules[0]!.from;
    expect(from).toEqual(await addressesOf(b, 'api', addresses));
    expect(from).not.toContain(oldAddress);
  });

  test('read-set rule: a client that exits between the read and the write makes the write fail, and the retry is right', async () => {
    const b = new Bench();
    await b.register('n1');
    await b.apply(db());
    await b.apply({ name: 'api', image: 'web:1', replicas: 1, resources: small });
    await b.settle(all);
    const addresses = new Map<string, string>();
    await observeAll(b, addresses);
    const api = (await b.live('api'))[0]!.id;
    const a = (await listFacts(b.store, 'assigned', prefixOf('assigned', 'n1'))).find((x) => x.value.replica === api)!;
    // A store that lets the api replica exit just before the controller's write.
    let injected = false;
    const racing: Store = new Proxy(b.store, {
      get(target, prop, receiver) {
        if (prop === 'txn' && !injected) {
          return async (req: Parameters<Store['txn']>[0]) => {
            injected = true;
            await target.put(buildKey('observed', 'n1', api), encodeFact('observed', { replica: api, service: 'api', node: 'n1', tenure: a.value.tenure, state: 'exited', exitCode: 1, address: addresses.get(api)!, at: b.t }));
            return target.txn(req);
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
    const before = await b.store.get(buildKey('netAddrs', 'api'));
    expect(decodeFact('netAddrs', before!.key, before!.value).addresses).toEqual([]);
    const wake = await networkController.reconcile({ store: racing, now: b.t, random: () => 0.5 });
    expect(injected).toBe(true);
    expect(wake.at).toBe(b.t + 100);
    expect((await b.store.get(buildKey('netAddrs', 'api')))!.modRevision).toBe(before!.modRevision);
    await b.step(networkController);
    const dbRep = (await rules(b))!.replicas.find((x) => x.service === 'db')!;
    expect(dbRep.policy).toBe('allow');
    expect(dbRep.rules[0]!.from).toEqual([]);
  });

  test('a policy change rewrites the rules without touching any replica', async () => {
    const { b, addresses } = await setup();
    const before = (await listFacts(b.store, 'replica', prefixOf('replica'))).map((r) => r.value.id).sort();
    b.t += 1_000;
    await b.apply(db({ allow: [{ service: 'api', port: 'pg' }, { service: 'other', port: 5432 }] }));
    await b.settle(all);
    const after = (await listFacts(b.store, 'replica', prefixOf('replica'))).map((r) => r.value.id).sort();
    expect(after).toEqual(before);
    const dbRep = (await rules(b))!.replicas.find((x) => x.service === 'db')!;
    expect(dbRep.rules).toEqual([{ port: 5432, protocol: 'tcp', services: ['api', 'other'], from: [...(await addressesOf(b, 'api', addresses)), ...(await addressesOf(b, 'other', addresses))].sort() }]);
    // Removing the policy opens the service.
    b.t += 1_000;
    await b.apply(db({ allow: [] }));
    await b.settle(all);
    expect((await rules(b))!.replicas.find((x) => x.service === 'db')!.policy).toBe('open');
    expect((await listFacts(b.store, 'replica', prefixOf('replica'))).map((r) => r.value.id).sort()).toEqual(before);
  });

  test('an allow without a port admits every port; a port the running replica does not declare is reported (CCA-E0423)', async () => {
    const { b } = await setup();
    b.t += 1_000;
    await b.apply({ ...db({ allow: [{ service: 'api' }, { service: 'other', port: 'admin' }] }), ports: [{ name: 'pg', container: 5432 }, { name: 'admin', container: 9000 }] });
    // The spec now declares `admin`, but the placed replica runs the old spec (a rollout would replace it).
    await b.step(networkController);
    const dbRep = (await rules(b))!.replicas.find((x) => x.service === 'db')!;
    expect(dbRep.rules.map((r) => [r.port, r.protocol, r.services])).toEqual([[undefined, undefined, ['api']]]);
    const decisions = await listFacts(b.store, 'decision', prefixOf('decision', 'service', 'db'));
    expect(decisions.some((d) => d.value.reasons.some((x) => x.startsWith('CCA-E0423')))).toBe(true);
  });

  test("a lost node's clients leave at once; a node with nothing policed gets no rule set", async () => {
    const b = new Bench();
    await b.register('n1');
    await b.register('n2');
    await b.apply({ ...db(), placement: { require: [{ attribute: 'node', op: '==', values: ['n1'] }] } });
    await b.apply({ name: 'api', image: 'web:1', replicas: 1, resources: small, placement: { require: [{ attribute: 'node', op: '==', values: ['n2'] }] } });
    await b.settle(all);
    const addresses = new Map<string, string>();
    await observeAll(b, addresses);
    await b.settle(all);
    expect((await rules(b, 'n1'))!.replicas[0]!.rules[0]!.from).toHaveLength(1);
    expect(await rules(b, 'n2')).toBeUndefined(); // nothing policed there: the agent's default (open) holds
    // n2's lease ends: the node controller marks it lost; its replica's address is no longer admitted.
    await b.store.revokeLease(b.leases.get('n2')!);
    b.t += 5_000;
    await b.settle(all);
    expect((await rules(b, 'n1'))!.replicas[0]!.rules[0]!.from).toEqual([]);
    const empty = new Bench();
    await empty.register('n9');
    await empty.settle(all);
    expect(await rules(empty, 'n9')).toBeUndefined();
  });

  test('describeAddresses names added and removed addresses; a set lists only IPv4 addresses, each once', () => {
    const c = (replica: string, address: string) => ({ replica, service: 'api', address, facts: [], node: { key: '', tenure: 1 } });
    const plan = planAddresses([c('api-3', '10.0.0.4'), c('api-2', '10.0.0.3'), c('api-1', '10.0.0.3'), c('api-4', 'fe80::1'), c('api-5', 'host.example')]);
    expect(plan).toMatchObject({ addresses: ['10.0.0.3', '10.0.0.4'], total: 2 });
    expect(plan.used.map((u) => u.replica)).toEqual(['api-1', 'api-3']);
    expect(describeAddresses('api', ['10.0.0.2', '10.0.0.3'], plan)).toEqual(['api: 2 address(es) (+10.0.0.4 -10.0.0.2)']);
  });
});
