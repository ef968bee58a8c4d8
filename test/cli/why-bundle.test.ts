import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { Decision } from '../../core/model/facts.js';
import { evidenceOf } from '../../jobs/decisions/record.js';
import { expectGolden } from './golden.js';
import { ADMIN, at, cca, liveServers, seedNode, type Live } from './harness.js';

const open = liveServers();

async function setup() {
  const live = await open();
  return live;
}

async function decide(live: Live, d: Omit<Decision, 'kind' | 'subject'> & { kind: Decision['kind']; subject: string }): Promise<string> {
  const key = buildKey('decision', d.kind, d.subject, d.id);
  await live.store.put(key, encodeFact('decision', d));
  return key;
}

/** A replica made by the replica controller from the service, then held pending by the scheduler. */
async function seedPending(live: Live) {
  await live.run(['apply', 'test/cli/files/web.cca', '--yes']);
  const svc = (await live.store.get(buildKey('service', 'web')))!;
  const created = await decide(live, {
    id: '20261129T090002Z-rc-create',
    kind: 'replica',
    subject: 'web-7f3a',
    controller: 'replica',
    action: 'created',
    at: at(2),
    evidence: [evidenceOf({ key: svc.key, kv: svc })],
    cause: { fact: svc.key, modRevision: svc.modRevision },
    reasons: ['service web wants 2 replicas and has 1'],
  });
  const pending = await decide(live, {
    id: '20261129T090003Z-sched-pending',
    kind: 'replica',
    subject: 'web-7f3a',
    controller: 'scheduler',
    action: 'pending',
    at: at(3),
    evidence: [
      { key: '/replicas/web/web-7f3a', modRevision: 7, value: encodeFact('replica', { id: 'web-7f3a', service: 'web', specRevision: svc.modRevision, desired: 'run', createdAt: at(2) }) },
      evidenceOf({ key: svc.key, kv: svc }),
    ],
    cause: { decision: created },
    reasons: [
      'needs 250m cpu and 64Mi memory: 2 nodes have < 250m free; 1 node excluded by require zone in ["a", "b"]',
      'replica web-7f3a of service web fits on no node',
    ],
  });
  await live.store.put(buildKey('repeat', 'scheduler', 'replica', 'web-7f3a'), encodeFact('repeat', { decision: pending, count: 12, first: at(3), last: at(60) }));
  return { created, pending };
}

describe('why', () => {
  test('a pending replica: the chain to its terminal, why not per constraint, repeats; plain, verbose-free JSON', async () => {
    const live = await setup();
    await seedPending(live);
    const argv = ['why', 'replica', 'web-7f3a'];
    const r = await live.run(argv);
    expectGolden('why-replica-pending', argv, r);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('complete');
    const verbose = await live.run([...argv, '-v']);
    expectGolden('why-replica-verbose', [...argv, '-v'], verbose);
    const json = await live.run([...argv, '-o', 'json']);
    expectGolden('why-replica-json', [...argv, '-o', 'json'], json);
    expect(JSON.parse(json.stdout)).toMatchObject({ complete: true, chain: [{ decision: { action: 'pending' } }, { decision: { action: 'created' } }] });
  });

  test('a cited spec is shown as read at its revision while retained, and said to be compacted after', async () => {
    const live = await setup();
    await seedPending(live);
    const before = await live.run(['why', 'replica', 'web-7f3a']);
    expect(before.stdout).toContain('(cited, retained) name=web image=');
    const svc = (await live.store.get(buildKey('service', 'web')))!;
    await live.store.put(svc.key, svc.value.replace('"replicas":2', '"replicas":3'));
    await live.store.compact(await live.store.revision());
    const after = await live.run(['why', 'replica', 'web-7f3a']);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain(`/services/web @${svc.modRevision}  (cited: `);
    expect(after.stdout).toContain(`revision ${svc.modRevision} was compacted, its value is no longer kept)`);
    expect(after.stdout).not.toContain('(cited, retained)');
  });

  test('a truncated chain says so and why; node and service subjects work; unknown subjects are coded', async () => {
    const live = await setup();
    await decide(live, {
      id: '20261129T090010Z-node-lost',
      kind: 'node',
      subject: 'n2',
      controller: 'node',
      action: 'lost',
      at: at(10),
      evidence: [{ key: '/node-status/n2', modRevision: 9, value: '{"node":"n2","state":"ready"}' }],
      cause: { decision: '/decisions/node/n2/20261129T085000Z-node-ready' },
      reasons: ['no keepalive for 30s (lease expired at 09:00:09Z)'],
    });
    const node = await live.run(['why', 'node', 'n2']);
    expectGolden('why-node-truncated', ['why', 'node', 'n2'], node);
    expect(node.stdout).toContain('truncated');
    await decide(live, {
      id: '20261129T090020Z-rc-scale',
      kind: 'service',
      subject: 'web',
      controller: 'replica',
      action: 'scaled up by 1',
      at: at(20),
      evidence: [],
      cause: { fact: '/services/web', modRevision: 3 },
      reasons: ['replicas 1 → 2'],
    });
    expectGolden('why-service', ['why', 'service', 'web'], await live.run(['why', 'service', 'web']));
    const missing = await live.run(['why', 'replica', 'nope']);
    expectGolden('why-unknown', ['why', 'replica', 'nope'], missing);
    expect(missing.code).toBe(1);
    expect((await live.run(['why', 'pod', 'x'])).code).toBe(1);
  });
});

/** The files of a .tar.gz: ustar headers, sizes in octal. */
function untar(gz: Buffer): Map<string, string> {
  const tar = gunzipSync(gz);
  const out = new Map<string, string>();
  for (let off = 0; off + 512 <= tar.length; ) {
    const name = tar.subarray(off, off + 100).toString('utf8').replace(/\0.*$/s, '');
    if (!name) break;
    const size = parseInt(tar.subarray(off + 124, off + 136).toString('utf8').replace(/\0.*$/s, ''), 8);
    out.set(name, tar.subarray(off + 512, off + 512 + size).toString('utf8'));
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe('bundle', () => {
  test('a redacted .tar.gz: a planted secret and the token never appear; requests, decisions, states and metrics do', async () => {
    const live = await setup();
    const cwd = mkdtempSync(join(tmpdir(), 'cca-bundle-'));
    const stateDir = mkdtempSync(join(tmpdir(), 'cca-bundle-state-'));
    const env = { CCA_STATE_DIR: stateDir };
    const SECRET = 'planted-s3cret-value-9d2f';
    // A service holding a secret, applied through the CLI.
    // Env values and config contents are not secrets to the API, but a bundle leaves the machine.
    const ENV_PASS = 'planted-envpass-77c1';
    const CONFIG = 'planted-config-body-31aa';
    const spec = `service api {\n  image = "busybox:1.35"\n  env = { DATABASE_URL = "postgres://app:${ENV_PASS}@db/x" }\n  secret db { value = "${SECRET}" env = "DB_PASSWORD" }\n  config app { path = "/etc/app.conf" content = "${CONFIG}" }\n}\n`;
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(cwd, 'api.cca'), spec);
    const applied = await live.run(['apply', 'api.cca', '--yes'], { cwd, env });
    expect(applied.code).toBe(0);
    // A decision whose evidence quotes the service fact with its secret opened (as a careless
    // controller might: the store itself holds it sealed) and a token.
    const stored = (await live.store.get(buildKey('service', 'api')))!;
    expect(stored.value).not.toContain(SECRET);
    const fact = JSON.parse(stored.value) as { secrets: { value: string }[] };
    fact.secrets[0]!.value = SECRET;
    const raw = { ...stored, value: JSON.stringify(fact) };
    await decide(live, {
      id: '20261129T090030Z-rc-create',
      kind: 'replica',
      subject: 'api-1',
      controller: 'replica',
      action: 'created',
      at: at(30),
      evidence: [{ key: raw.key, modRevision: raw.modRevision, value: raw.value }],
      cause: { fact: raw.key, modRevision: raw.modRevision },
      reasons: [`saw Authorization: Bearer ${ADMIN} in a log line`],
    });
    await seedNode(live.store, 'n1', 'a', 2000);
    // A failing command leaves its request ID and diagnostic in the journal.
    const failed = await live.run(['get', 'service', 'nope'], { env });
    expect(failed.code).toBe(1);
    const failedId = /request: (\S+)/.exec(failed.stderr)![1]!;

    const r = await live.run(['bundle', '-o', 'evidence.tar.gz'], { cwd, env });
    expect(r.code).toBe(0);
    const path = join(cwd, 'evidence.tar.gz');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const gz = readFileSync(path);
    const files = untar(gz);
    const everything = [...files.values()].join('\n');
    expect([...files.keys()].map((k) => k.replace(/^[^/]+\//, ''))).toEqual([
      'versions.json',
      'requests.json',
      'decisions.json',
      'nodes.json',
      'replicas.json',
      'services.json',
      'metrics.txt',
      'errors.json',
      'README.txt',
    ]);
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain(ENV_PASS);
    expect(everything).not.toContain(CONFIG);
    expect(everything).toContain('DATABASE_URL');
    expect(everything).not.toContain(ADMIN);
    expect(everything).not.toContain(ADMIN.slice(10));
    expect(gunzipSync(gz).toString('latin1')).not.toContain(SECRET);
    expect(everything).toContain(failedId);
    expect(everything).toContain('CCA-E0609');
    expect(everything).toContain('/decisions/replica/api-1/20261129T090030Z-rc-create');
    expect(everything).toContain('cca_http_requests_total');
    expect(everything).toContain('"name": "n1"');
    expect(everything).toContain('(redacted)');
    expectGolden('bundle', ['bundle', '-o', 'evidence.tar.gz'], { ...r, stdout: r.stdout.replace(cwd, 'CWD') });

    const last = await live.run(['bundle', '--last', '-o', 'last.tar.gz', '--output', 'json'], { cwd, env });
    expect(JSON.parse(last.stdout)).toMatchObject({ file: join(cwd, 'last.tar.gz'), requests: 1, errors: [] });
  });

  test('the newest 500 decisions are kept, found across pages of the store', async () => {
    const live = await setup();
    const cwd = mkdtempSync(join(tmpdir(), 'cca-bundle-'));
    for (let i = 0; i < 1100; i++) {
      const subject = `r${String(i).padStart(4, '0')}`;
      await decide(live, { id: 'd', kind: 'replica', subject, controller: 'replica', action: 'created', at: at(i), evidence: [], reasons: [] });
    }
    const r = await live.run(['bundle', '-o', 'many.tar.gz', '--output', 'json'], { cwd, env: { CCA_STATE_DIR: cwd } });
    expect(JSON.parse(r.stdout)).toMatchObject({ decisions: 500 });
    const decisions = JSON.parse([...untar(readFileSync(join(cwd, 'many.tar.gz'))).entries()].find(([k]) => k.endsWith('decisions.json'))![1]) as { key: string }[];
    const keys = decisions.map((d) => d.key);
    expect(keys).toContain('/decisions/replica/r1099/d');
    expect(keys).toContain('/decisions/replica/r0600/d');
    expect(keys).not.toContain('/decisions/replica/r0599/d');
  });

  test('with the server down the bundle is still written, saying what could not be collected', async () => {
    const live = await setup();
    await live.close();
    const cwd = mkdtempSync(join(tmpdir(), 'cca-bundle-'));
    const r = await cca(['bundle', '--server', live.url], { cwd, env: { CCA_STATE_DIR: mkdtempSync(join(tmpdir(), 'cca-bundle-state-')) } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/not collected: server version \(\/healthz\) \(CCA-E0701\)/);
    expectGolden('bundle-server-down', ['bundle'], { ...r, stdout: r.stdout.replace(cwd, 'CWD') });
  });
});
