import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { parseSealed, templateHash, type ServiceSpec } from '../../core/model/index.js';
import { openStore } from '../../db/index.js';
import type { Store } from '../../db/store.js';
import { createApp } from '../../handlers/app.js';
import { ensureTokens } from '../../handlers/auth.js';
import { newSecretKey, parseKeyring, SecretBox } from '../../handlers/secret-box.js';
import { createTestDatabase } from '../support/databases.js';
import { startTestEtcd } from '../support/etcd-server.js';
import { ADMIN, JOIN, testDeps } from '../handlers/harness.js';

/**
 * A DBA (or anyone with the database, an etcd dump or the SQLite file) never sees a secret
 * value: the API seals it before it is written, on every backend; only the agent of the node
 * that runs the replica gets it back in the clear.
 */
const PLAIN = 'pa55-PLAINTEXT-s3cr3t-value';
const spec = (value = PLAIN) => `service api {\n  image = "busybox:1.35"\n  secret db { value = "${value}" env = "DB_PASSWORD" }\n}\n`;
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function appOn(store: Store, box: SecretBox | undefined) {
  await ensureTokens(store, { admin: ADMIN, join: JOIN });
  const app = createApp(testDeps(store, { auth: { openReads: false }, ...(box ? { secrets: box } : { secrets: undefined }) }));
  const call = async (method: string, path: string, token: string, body?: string, json?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'text/x-cca';
    if (json !== undefined) headers['content-type'] = 'application/json';
    const res = await app.request(path, { method, headers, body: body ?? (json === undefined ? undefined : JSON.stringify(json)) });
    return { status: res.status, json: (await res.json()) as Record<string, any> };
  };
  return { call };
}

const box = new SecretBox(parseKeyring(newSecretKey('k1'), 'test'));

/** Apply, then place the replica as the scheduler would (a copy of the stored spec under /assigned/). */
async function applyAndPlace(store: Store) {
  const { call } = await appOn(store, box);
  const applied = await call('POST', '/v1/apply', ADMIN, spec());
  expect(applied.status, JSON.stringify(applied.json)).toBe(200);
  const kv = (await store.get(buildKey('service', 'api')))!;
  const stored = decodeFact('service', buildKey('service', 'api'), kv.value);
  const enrolled = await call('POST', '/v1/agent/enroll', JOIN, undefined, { node: 'n1' });
  const credential = enrolled.json.credential as string;
  const assignment = { replica: 'api-aaaaaaaa', service: 'api', node: 'n1', tenure: 1, resources: { cpuMillis: 100, memoryBytes: 1 << 20 }, specRevision: kv.modRevision, spec: stored, desired: 'run', placedAt: 1 };
  await store.put(buildKey('assigned', 'n1', 'api-aaaaaaaa'), encodeFact('assigned', assignment as never));
  return { call, stored, credential };
}

describe.each([
  ['memory', async () => openStore('memory:')],
  ['sqlite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cca-sealed-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return openStore(`sqlite:${join(dir, 'store.db')}`);
  }],
  ['postgres', async () => {
    const db = await createTestDatabase('sealed');
    cleanups.push(() => db.drop());
    return openStore(db.url, { postgres: { leaseReaperMs: 60_000 } });
  }],
  ['etcd', async () => {
    const etcd = await startTestEtcd();
    cleanups.push(() => etcd.stop());
    return openStore(`etcd://${etcd.hostPort}/sealed-${Date.now()}`);
  }],
] as const)('secret values at rest on %s', (name, open) => {
  it('every stored revision holds the sealed form; the node that runs the replica reads the value', async () => {
    const store = await open();
    cleanups.push(() => store.close());
    const { call, stored, credential } = await applyAndPlace(store);
    expect(parseSealed(stored.secrets[0]!.value)?.keyId).toBe('k1');
    // Every key and every revision the store kept, as its own API returns them.
    const head = await store.revision();
    for (let rev = 1; rev <= head; rev++) {
      const { kvs } = await store.range({ prefix: '/', revision: rev }).catch(() => ({ kvs: [] as { value: string }[] }));
      for (const kv of kvs) expect(kv.value).not.toContain(PLAIN);
    }
    const got = await call('GET', '/v1/agent/nodes/n1/assignments?after=0', credential);
    expect(got.status, JSON.stringify(got.json)).toBe(200);
    expect(got.json.assignments[0].spec.secrets[0].value).toBe(PLAIN);
    // Everyone else still sees it redacted, the admin included.
    const shown = await call('GET', '/v1/services/api', ADMIN);
    expect(JSON.stringify(shown.json)).not.toContain(PLAIN);
  });
});

describe('secret values at rest, as a DBA sees them', () => {
  it('Postgres: no row of cca_kv or cca_log holds the value, in any column', async () => {
    const db = await createTestDatabase('sealed_raw');
    cleanups.push(() => db.drop());
    const store = await openStore(db.url, { postgres: { leaseReaperMs: 60_000 } });
    cleanups.push(() => store.close());
    await applyAndPlace(store);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      for (const table of ['cca_kv', 'cca_log']) {
        const rows = (await client.query(`SELECT row_to_json(t)::text AS r FROM ${table} t`)).rows as { r: string }[];
        expect(rows.length).toBeGreaterThan(0);
        expect(rows.filter((r) => r.r.includes(PLAIN)), table).toEqual([]);
        expect(rows.some((r) => r.r.includes('cca:sealed:v1:k1:')), table).toBe(true);
      }
    } finally {
      await client.end();
    }
  });

  it('SQLite: the database files contain no plaintext, and are 0600', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cca-sealed-file-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    await applyAndPlace(store);
    await store.close();
    const files = readdirSync(dir);
    expect(files).toContain('store.db');
    for (const f of files) {
      expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
      expect(readFileSync(join(dir, f)).includes(Buffer.from(PLAIN)), f).toBe(false);
      expect(readFileSync(join(dir, f)).includes(Buffer.from('cca:sealed:v1:')) || f !== 'store.db', f).toBe(true);
    }
  });
});

describe('sealing keeps rollouts honest', () => {
  it('re-applying the same value writes nothing; a new value rolls; a rotation re-seals without rolling', async () => {
    const store = await openStore('memory:');
    const old = parseKeyring(newSecretKey('old'), 'test');
    const { call } = await appOn(store, new SecretBox(old));
    expect((await call('POST', '/v1/apply', ADMIN, spec())).status).toBe(200);
    const read = async () => decodeFact('service', buildKey('service', 'api'), (await store.get(buildKey('service', 'api')))!.value) as ServiceSpec;
    const first = await read();
    const again = await call('POST', '/v1/apply', ADMIN, spec());
    expect(again.json.plan.unchanged).toEqual(['api']);
    expect((await read()).secrets[0]!.value).toBe(first.secrets[0]!.value);

    // Rotation: the new key first, the old one still known.
    const rotated = new SecretBox([...parseKeyring(newSecretKey('new'), 'test'), ...old]);
    const { call: call2 } = await appOn(store, rotated);
    const r = await call2('POST', '/v1/secrets/rotate', ADMIN);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json).toMatchObject({ keyId: 'new', resealed: 1 });
    const after = await read();
    expect(parseSealed(after.secrets[0]!.value)?.keyId).toBe('new');
    expect(after.secrets[0]!.value).not.toBe(first.secrets[0]!.value);
    expect(templateHash(after)).toBe(templateHash(first));
    expect(rotated.open(after.secrets[0]!.value)).toBe(PLAIN);
    // The same value applied through the rotated server is still "unchanged".
    expect((await call2('POST', '/v1/apply', ADMIN, spec())).json.plan.unchanged).toEqual(['api']);

    // A new value is a new template: the service rolls.
    const changed = await call2('POST', '/v1/apply', ADMIN, spec('another-value'));
    expect(changed.json.plan.changed.map((c: { name: string }) => c.name)).toEqual(['api']);
    expect(templateHash(await read())).not.toBe(templateHash(first));
  });

  it('without a key, a spec with secrets is refused (CCA-E0662) and nothing is written', async () => {
    const store = await openStore('memory:');
    const { call } = await appOn(store, undefined);
    const before = await store.revision();
    const r = await call('POST', '/v1/apply', ADMIN, spec());
    expect(r.json.error?.code ?? r.json.code, JSON.stringify(r.json)).toBe('CCA-E0662');
    expect(await store.revision()).toBe(before);
  });

  it('a key that is not the one, or an altered value, is CCA-E0661 for the agent, never garbage', async () => {
    const store = await openStore('memory:');
    const { stored, credential } = await applyAndPlace(store);
    const other = new SecretBox(parseKeyring(newSecretKey('k1'), 'test'));
    const { call } = await appOn(store, other);
    const wrong = await call('GET', '/v1/agent/nodes/n1/assignments?after=0', credential);
    expect(wrong.json.error?.code ?? wrong.json.code, JSON.stringify(wrong.json)).toBe('CCA-E0661');
    const sealed = stored.secrets[0]!.value;
    const tampered = sealed.slice(0, -3) + (sealed.endsWith('AAA') ? 'BBB' : 'AAA');
    expect(() => box.open(tampered)).toThrow(expect.objectContaining({ code: 'CCA-E0661' }));
  });
});
