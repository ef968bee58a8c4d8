import { EVENTS_TRIM_EVERY } from '../../handlers/routes/agent.js';
import { readFile } from 'node:fs/promises';
import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { ADMIN, JOIN, securedApp } from './harness.js';

const web = await readFile('fixtures/web.cca', 'utf8');
const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string; message: string } }).error;

describe('auth', () => {
  test('writes need the admin token; reads too unless opened; every refusal is coded', async () => {
    const { call } = await securedApp();
    expect((await call('POST', '/v1/apply', { text: web })).status).toBe(401);
    // A valid token without the role is forbidden (403), not unauthenticated.
    expect(await errorOf(await call('POST', '/v1/apply', { text: web, token: JOIN }))).toMatchObject({ code: 'CCA-E0636' });
    expect((await call('POST', '/v1/apply', { text: web, token: `cca_admin_${'x'.repeat(43)}` })).status).toBe(401);
    expect((await call('GET', '/v1/services')).status).toBe(401);
    expect((await call('GET', '/v1/state')).status).toBe(401);
    expect((await call('GET', '/v1/watch')).status).toBe(401);
    expect((await call('DELETE', '/v1/services/web')).status).toBe(401);
    expect((await call('GET', '/v1/services', { token: ADMIN })).status).toBe(200);
    expect((await call('GET', '/healthz')).status).toBe(200);
  });

  test('agents enroll with the join token and act for their own node only', async () => {
    const { call } = await securedApp();
    expect((await call('POST', '/v1/agent/enroll', { json: { node: 'n1' } })).status).toBe(401);
    const n1 = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()).credential as string;
    const n2 = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n2' }, token: JOIN })).json()).credential as string;
    expect(n1).toMatch(/^cca_node_/);
    const record = { name: 'n1', zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 } };
    const other = await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: n2 });
    expect(other.status).toBe(403);
    expect(await errorOf(other)).toMatchObject({ code: 'CCA-E0606' });
    expect(await errorOf(await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: JOIN }))).toMatchObject({ code: 'CCA-E0636' });
    expect((await call('GET', '/v1/agent/nodes/n1/assignments', { token: n2 })).status).toBe(403);
    expect((await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: n1 })).status).toBe(200);
    // A node credential is not an admin token.
    expect(await errorOf(await call('POST', '/v1/apply', { text: web, token: n1 }))).toMatchObject({ code: 'CCA-E0636' });
    // Re-enrolling a node that has a credential is refused: the join token cannot take it over
    // (test/security/node-identity.test.ts has the rest: reset, rotation).
    expect(await errorOf(await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN }))).toMatchObject({ code: 'CCA-E0630' });
    expect((await call('GET', '/v1/agent/nodes/n1/assignments', { token: n1 })).status).toBe(200);
    expect(await errorOf(await call('POST', '/v1/agent/enroll', { json: { node: 'Bad Name' }, token: JOIN }))).toMatchObject({ code: 'CCA-E0614' });
  });
});

describe('apply', () => {
  test('a dry run shows the diff and writes nothing; apply writes in one revision; a change diffs per field', async () => {
    const { call, store } = await securedApp();
    const dry = await (await call('POST', '/v1/apply?dry_run=1', { text: web, token: ADMIN })).json();
    expect(dry).toMatchObject({ dryRun: true, plan: { added: ['web'], changed: [], removed: [] } });
    expect(await store.get(buildKey('service', 'web'))).toBeNull();
    const real = await (await call('POST', '/v1/apply', { text: web, token: ADMIN })).json();
    expect(real.plan.added).toEqual(['web']);
    expect((await store.get(buildKey('service', 'web')))?.modRevision).toBe(real.revision);
    const again = await (await call('POST', '/v1/apply', { text: web, token: ADMIN })).json();
    expect(again).toMatchObject({ plan: { added: [], unchanged: ['web'] }, revision: real.revision });
    const scaled = await (await call('POST', '/v1/apply?dry_run=1', { text: web.replace('replicas = 3', 'replicas = 5'), token: ADMIN })).json();
    expect(scaled.plan.changed).toEqual([{ name: 'web', rolls: [], changes: [{ path: 'replicas', old: 3, new: 5 }] }]);
  });

  test('JSON specs, prune, and secrets never shown in a diff or a read', async () => {
    const { call } = await securedApp();
    const spec = (secret: string) => ({ name: 'api', image: 'busybox:1.35', secrets: [{ name: 'token', value: secret, env: 'TOKEN' }] });
    expect((await call('POST', '/v1/apply', { json: { services: [spec('s3cr3t-one')] }, token: ADMIN })).status).toBe(200);
    await call('POST', '/v1/apply', { text: web, token: ADMIN });
    const diff = await (await call('POST', '/v1/apply?dry_run=1', { json: { services: [spec('s3cr3t-two')], prune: true }, token: ADMIN })).text();
    expect(diff).not.toContain('s3cr3t');
    expect(JSON.parse(diff).plan).toMatchObject({ changed: [{ name: 'api', changes: [{ path: 'secrets.0.value', old: '(redacted)', new: '(redacted)' }] }], removed: ['web'] });
    const read = await (await call('GET', '/v1/services/api', { token: ADMIN })).text();
    expect(read).not.toContain('s3cr3t');
    expect(await (await call('GET', '/v1/state?prefix=/services/', { token: ADMIN })).text()).not.toContain('s3cr3t');
    const { readSse } = await import('./harness.js');
    const events = await readSse(await call('GET', '/v1/watch?prefix=/services/&from=1', { token: ADMIN }), (es) => es.filter((e) => e.event === 'batch').length >= 2);
    expect(events.filter((e) => e.event === 'batch').length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(events)).not.toContain('s3cr3t');
    expect(JSON.parse(read).service).toMatchObject({ name: 'api', desired: 1, replicas: 0 });
  });

  test('bad input: .cca errors with spans, bad JSON, unknown fields, wrong content type, oversize — all coded 4xx', async () => {
    const { call } = await securedApp();
    const bad = await call('POST', '/v1/apply', { text: 'service web {\n  image = "busybox:1.35"\n  replica = 3\n  cpu = lots\n}\n', token: ADMIN, headers: { 'x-cca-filename': 'web.cca' } });
    expect(bad.status).toBe(400);
    const body = await bad.json();
    expect(body.error.code).toBe('CCA-E0612');
    expect(body.diagnostics.length).toBeGreaterThanOrEqual(2);
    expect(body.diagnostics[0]).toMatchObject({ code: 'CCA-E0210', span: { file: 'web.cca', line: 3 } });
    expect(`${body.diagnostics[0].message} ${body.diagnostics[0].fix}`).toMatch(/replicas/);
    const json = await call('POST', '/v1/apply', { token: ADMIN, headers: { 'content-type': 'application/json' }, text: '{"services": [' });
    expect(await errorOf(json)).toMatchObject({ code: 'CCA-E0601' });
    expect(await errorOf(await call('POST', '/v1/apply', { json: { servces: [] }, token: ADMIN }))).toMatchObject({ code: 'CCA-E0603' });
    const unknownField = await call('POST', '/v1/apply', { json: { services: [{ name: 'x', image: 'busybox:1.35', replica: 2 }] }, token: ADMIN });
    expect((await unknownField.json()).diagnostics[0].code).toMatch(/^CCA-E03/);
    expect((await call('POST', '/v1/apply', { text: web, token: ADMIN, headers: { 'content-type': 'application/xml' } })).status).toBe(415);
    const big = await call('POST', '/v1/apply', { text: `# ${'x'.repeat(5 * 1024 * 1024)}`, token: ADMIN });
    expect(big.status).toBe(413);
    expect(await errorOf(big)).toMatchObject({ code: 'CCA-E0602' });
  });

  test('a dependency cycle is refused at apply time, including one closed through services already stored', async () => {
    const { call, store } = await securedApp();
    const svc = (name: string, after: string[]) => `service ${name} {\n  image = "busybox:1.35"\n  command = ["sleep", "100"]\n${after.length ? `  after = [${after.map((a) => `"${a}"`).join(', ')}]\n` : ''}}\n`;
    expect((await call('POST', '/v1/apply', { text: svc('db', []) + svc('cache', ['db']) + svc('api', ['cache']), token: ADMIN })).status).toBe(200);
    const before = (await store.get(buildKey('service', 'db')))!.modRevision;
    // Only db is submitted; the cycle db → api → cache → db goes through two stored services.
    const closed = await call('POST', '/v1/apply', { text: svc('db', ['api']), token: ADMIN, headers: { 'x-cca-filename': 'db.cca' } });
    expect(closed.status).toBe(400);
    const body = await closed.json();
    expect(body.error.code).toBe('CCA-E0612');
    expect(body.diagnostics).toHaveLength(1);
    expect(body.diagnostics[0]).toMatchObject({ code: 'CCA-E0306', span: { file: 'db.cca' } });
    expect(body.diagnostics[0].message).toContain('api → cache → db → api');
    expect((await store.get(buildKey('service', 'db')))!.modRevision).toBe(before);
    // The JSON form is checked the same way.
    const asJson = await call('POST', '/v1/apply', { json: { services: [{ name: 'db', image: 'busybox:1.35', after: ['api'] }] }, token: ADMIN });
    expect((await asJson.json()).diagnostics.map((d: { code: string }) => d.code)).toEqual(['CCA-E0306']);
    // With prune, services left out are deleted, so they are no longer dependency targets.
    const pruned = await call('POST', '/v1/apply', { json: { services: [{ name: 'api', image: 'busybox:1.35', after: ['cache'] }], prune: true }, token: ADMIN });
    expect((await pruned.json()).diagnostics.map((d: { code: string }) => d.code)).toEqual(['CCA-E0305']);
  });

  test('a concurrent change makes an apply fail with a coded conflict instead of overwriting', async () => {
    const { call, store } = await securedApp();
    await call('POST', '/v1/apply', { text: web, token: ADMIN });
    const realTxn = store.txn.bind(store);
    // Someone else changes the service between our read and our write.
    store.txn = async (req) => {
      store.txn = realTxn;
      const kv = await store.get(buildKey('service', 'web'));
      await store.put(buildKey('service', 'web'), kv!.value.replace('"replicas":3', '"replicas":4'));
      return realTxn(req);
    };
    const r = await call('POST', '/v1/apply', { text: web.replace('replicas = 3', 'replicas = 7'), token: ADMIN });
    expect(r.status).toBe(409);
    expect(await errorOf(r)).toMatchObject({ code: 'CCA-E0611' });
  });

  test('delete removes a service; an unknown one is a coded 404', async () => {
    const { call, store } = await securedApp();
    await call('POST', '/v1/apply', { text: web, token: ADMIN });
    expect((await call('DELETE', '/v1/services/web', { token: ADMIN })).status).toBe(200);
    expect(await store.get(buildKey('service', 'web'))).toBeNull();
    const again = await call('DELETE', '/v1/services/web', { token: ADMIN });
    expect(again.status).toBe(404);
    expect(await errorOf(again)).toMatchObject({ code: 'CCA-E0609' });
    expect((await call('DELETE', '/v1/services/..%2Fetc', { token: ADMIN })).status).toBe(404);
  });
});

describe('agent API', () => {
  async function enrolled(node = 'n1') {
    const ctx = await securedApp();
    const credential = (await (await ctx.call('POST', '/v1/agent/enroll', { json: { node }, token: JOIN })).json()).credential as string;
    const record = { name: node, zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 }, images: { 'busybox:1.35': 'sha256:abc' } };
    return { ...ctx, credential, record };
  }

  test('register on a lease gives a tenure; resuming the lease keeps it; a new registration is a new tenure', async () => {
    const { call, credential, record, store } = await enrolled();
    const first = await (await call('POST', '/v1/agent/nodes/n1/register', { json: { ...record, leaseTtlSeconds: 30 }, token: credential })).json();
    expect(first).toMatchObject({ ttl: 30 });
    expect((await store.get(buildKey('node', 'n1')))?.createRevision).toBe(first.tenure);
    const resumed = await (await call('POST', '/v1/agent/nodes/n1/register', { json: { ...record, resumeLease: first.lease }, token: credential })).json();
    expect(resumed).toMatchObject({ lease: first.lease, tenure: first.tenure });
    expect((await call('POST', '/v1/agent/nodes/n1/keepalive', { json: { lease: first.lease }, token: credential })).status).toBe(200);
    const fresh = await (await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).json();
    expect(fresh.tenure).toBeGreaterThan(first.tenure);
    const gone = await call('POST', '/v1/agent/nodes/n1/keepalive', { json: { lease: first.lease }, token: credential });
    expect(gone.status).toBe(404);
    expect(await errorOf(gone)).toMatchObject({ code: 'CCA-E0107' });
    const invalid = await call('POST', '/v1/agent/nodes/n1/register', { json: { ...record, capacity: { cpuMillis: -1 } }, token: credential });
    expect(await errorOf(invalid)).toMatchObject({ code: 'CCA-E0614' });
  });

  test('the assignment long poll answers at once on change, else after waitMs; observations need the current tenure', async () => {
    const { call, credential, record, store } = await enrolled();
    const reg = await (await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).json();
    const first = await (await call('GET', '/v1/agent/nodes/n1/assignments', { token: credential })).json();
    expect(first).toMatchObject({ changed: true, assignments: [] });
    const idle = Date.now();
    const none = await (await call('GET', `/v1/agent/nodes/n1/assignments?after=${first.revision}&waitMs=200`, { token: credential })).json();
    expect(none.changed).toBe(false);
    expect(Date.now() - idle).toBeGreaterThanOrEqual(150);
    const waiting = call('GET', `/v1/agent/nodes/n1/assignments?after=${first.revision}&waitMs=5000`, { token: credential });
    const spec = (await import('../../core/model/index.js')).validateService({ name: 'web', image: 'busybox:1.35' });
    if (!spec.ok) throw new Error('fixture');
    await store.put(
      buildKey('assigned', 'n1', 'web-1'),
      encodeFact('assigned', { replica: 'web-1', service: 'web', node: 'n1', tenure: reg.tenure, resources: { cpuMillis: 100, memoryBytes: 1 }, specRevision: 1, spec: spec.value, placedAt: 0 }),
    );
    const got = await (await waiting).json();
    expect(got.changed).toBe(true);
    expect(got.assignments.map((a: { replica: string }) => a.replica)).toEqual(['web-1']);
    const obs = { replica: 'web-1', service: 'web', node: 'n1', tenure: reg.tenure, state: 'running', at: 1 };
    expect((await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: [obs] }, token: credential })).status).toBe(200);
    const ev = { node: 'n1', kind: 'started', message: 'web-1 started', at: 1 };
    expect((await call('POST', '/v1/agent/nodes/n1/events', { json: { tenure: reg.tenure, events: [ev] }, token: credential })).status).toBe(200);
    // A new registration ends the old tenure: its writes are refused.
    await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential });
    const stale = await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: [obs] }, token: credential });
    expect(stale.status).toBe(409);
    expect(await errorOf(stale)).toMatchObject({ code: 'CCA-E0613' });
    const wrongNode = await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: [{ ...obs, node: 'n2' }] }, token: credential });
    expect(await errorOf(wrongNode)).toMatchObject({ code: 'CCA-E0603' });
  });

  test("a report deletes the node's reports of replicas released since, 25 a report, never one still assigned", async () => {
    const { call, credential, record, store } = await enrolled();
    const reg = await (await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).json();
    const spec = (await import('../../core/model/index.js')).validateService({ name: 'web', image: 'busybox:1.35' });
    if (!spec.ok) throw new Error('fixture');
    const assign = (id: string) =>
      store.put(buildKey('assigned', 'n1', id), encodeFact('assigned', { replica: id, service: 'web', node: 'n1', tenure: reg.tenure, resources: { cpuMillis: 1, memoryBytes: 1 }, specRevision: 1, spec: spec.value, placedAt: 0 }));
    const obs = (id: string) => ({ replica: id, service: 'web', node: 'n1', tenure: reg.tenure as number, state: 'exited' as const, exitCode: 0, at: 1 });
    const ids = Array.from({ length: 40 }, (_, i) => `web-${String(i).padStart(2, '0')}`);
    for (const id of ids) await assign(id);
    expect((await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: ids.map(obs) }, token: credential })).status).toBe(200);
    // The scheduler releases 30 of them (their assignments deleted); another node's report stays.
    for (const id of ids.slice(0, 30)) await store.delete(buildKey('assigned', 'n1', id));
    await store.put(buildKey('observed', 'n2', 'web-00'), encodeFact('observed', { ...obs('web-00'), node: 'n2' }));
    const observed = async () => (await store.range({ prefix: '/observed/n1/' })).kvs.map((kv) => kv.key.slice('/observed/n1/'.length));
    const report = async () => expect((await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: [obs('web-39')] }, token: credential })).status).toBe(200);
    await report();
    expect(await observed()).toEqual([...ids.slice(25, 30), ...ids.slice(30)]);
    await report();
    expect(await observed()).toEqual(ids.slice(30));
    expect(await store.get(buildKey('observed', 'n2', 'web-00'))).not.toBeNull();
  });

  test('a report larger than one store transaction is written whole: every event kept (a resend does not double), every observation admitted', async () => {
    const { call, credential, record, store } = await enrolled();
    const reg = await (await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).json();
    const post = (route: string, json: unknown) => call('POST', `/v1/agent/nodes/n1/${route}`, { json, token: credential });
    const batch = (from: number) => Array.from({ length: 100 }, (_, i) => ({ node: 'n1', kind: 'started', message: `e${from + i}`, at: from + i }));
    const stored = async () => (await store.range({ prefix: '/events/n1/' })).kvs.map((kv) => (JSON.parse(kv.value) as { message: string }).message);
    expect((await post('events', { tenure: reg.tenure, events: batch(0) })).status).toBe(200);
    expect((await post('events', { tenure: reg.tenure, events: batch(100) })).status).toBe(200);
    // The same batch again (an answer lost on the way back): the same keys, nothing doubled.
    expect((await post('events', { tenure: reg.tenure, events: batch(100) })).status).toBe(200);
    expect(await stored()).toEqual(batch(0).concat(batch(100)).map((e) => e.message));
    // Past the node's bound of 200, the oldest go and every new one stays.
    expect((await post('events', { tenure: reg.tenure, events: batch(200) })).status).toBe(200);
    expect(await stored()).toEqual(batch(100).concat(batch(200)).map((e) => e.message));
    // Within EVENTS_TRIM_EVERY of the last trim new events are put without a listing (one
    // older than every event kept included); the next trim takes the node back to its bound.
    expect((await post('events', { tenure: reg.tenure, events: [{ node: 'n1', kind: 'started', message: 'late', at: 50 }] })).status).toBe(200);
    expect(await stored()).toEqual(['late', ...batch(100).concat(batch(200)).map((e) => e.message)]);
    const tooMany = await post('events', { tenure: reg.tenure, events: [...batch(300), ...batch(400).slice(0, 1)] });
    expect(await errorOf(tooMany)).toMatchObject({ code: 'CCA-E0603' });
    expect(await stored()).toHaveLength(201);
    expect((await post('events', { tenure: reg.tenure, events: batch(300).slice(0, EVENTS_TRIM_EVERY) })).status).toBe(200);
    expect(await stored()).toEqual([...batch(100).slice(EVENTS_TRIM_EVERY), ...batch(200), ...batch(300).slice(0, EVENTS_TRIM_EVERY)].map((e) => e.message));

    const spec = (await import('../../core/model/index.js')).validateService({ name: 'web', image: 'busybox:1.35' });
    if (!spec.ok) throw new Error('fixture');
    const replicas = Array.from({ length: 150 }, (_, i) => `web-${i}`);
    for (const replica of replicas) {
      const a = { replica, service: 'web', node: 'n1', tenure: reg.tenure, resources: { cpuMillis: 1, memoryBytes: 1 }, specRevision: 1, spec: spec.value, placedAt: 0 };
      await store.put(buildKey('assigned', 'n1', replica), encodeFact('assigned', a));
    }
    const observations = replicas.map((replica) => ({ replica, service: 'web', node: 'n1', tenure: reg.tenure, state: 'running', at: 1 }));
    // One replica not assigned here, in the second part: nothing of the batch is written.
    const refused = await post('observations', { tenure: reg.tenure, observations: [...observations, { ...observations[0]!, replica: 'db-1' }] });
    expect(await errorOf(refused)).toMatchObject({ code: 'CCA-E0634' });
    expect((await store.range({ prefix: '/observed/n1/', countOnly: true })).count).toBe(0);
    expect((await post('observations', { tenure: reg.tenure, observations })).status).toBe(200);
    expect((await store.range({ prefix: '/observed/n1/', countOnly: true })).count).toBe(150);
  });
});
