import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isCcaError, type CcaError } from '../../core/diagnostics/index.js';
import { openStore } from '../../db/index.js';
import { Etcd3 } from 'etcd3';
import { electionNamespace, runForLeader } from '../../db/etcd/election.js';
import { etcdConnection, parseEtcdUrl } from '../../db/etcd/store.js';
import type { Store } from '../../db/store.js';
import { startServer } from '../../server/start.js';
import { waitFor } from '../support/wait.js';
import { startTestEtcd, type RunningEtcd } from '../support/etcd-server.js';
import { makeTestCa, type CertFiles, type TestCa } from '../support/tls-certs.js';
import { codeOf } from './conformance.js';

describe('etcd+https URLs', () => {
  test('TLS files ride in the query; hosts become https://', () => {
    expect(parseEtcdUrl('etcd+https://a:1,b:2/p?ca=/x/ca.pem&cert=/x/c.pem&key=/x/c.key')).toEqual({
      hosts: ['https://a:1', 'https://b:2'],
      prefix: '/p/',
      tls: { ca: '/x/ca.pem', cert: '/x/c.pem', key: '/x/c.key' },
    });
    expect(parseEtcdUrl('etcd+https://u:pw@a:1/p%3Fq')).toEqual({ hosts: ['https://a:1'], prefix: '/p?q/', auth: { username: 'u', password: 'pw' }, tls: {} });
    expect(parseEtcdUrl('ETCD+HTTPS://a:1?ca=ca.pem')).toEqual({ hosts: ['https://a:1'], prefix: '', tls: { ca: 'ca.pem' } });
    expect(parseEtcdUrl('etcd://a:1/p')).toEqual({ hosts: ['http://a:1'], prefix: '/p/' });
  });

  test('a parameter that is unknown, alone or on plain etcd:// is CCA-E0116', () => {
    for (const [url, reason] of [
      ['etcd+https://a:1/p?ca=x&verify=no', /unknown parameter verify/],
      ['etcd+https://a:1/p?cert=c.pem', /cert= and key= go together/],
      ['etcd+https://a:1/p?key=k.pem', /cert= and key= go together/],
      ['etcd+https://a:1/p?ca=', /ca/],
      ['etcd://a:1/p?ca=ca.pem', /need etcd\+https/],
    ] as const) {
      expect(() => parseEtcdUrl(url)).toThrow(/CCA-E0116/);
      expect(() => parseEtcdUrl(url)).toThrow(reason);
    }
  });
});

describe('EtcdStore over TLS, against etcd with --client-cert-auth', () => {
  let dir: string;
  let ca: TestCa;
  let stranger: TestCa;
  let client: CertFiles;
  let etcd: RunningEtcd;
  const stores: Store[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cca-etcd-tls-'));
    ca = makeTestCa(dir, 'ca');
    stranger = makeTestCa(dir, 'stranger');
    const server = ca.issue('etcd-server');
    client = ca.issue('etcd-client', { cn: 'ccattler' });
    etcd = await startTestEtcd({ fresh: true, tls: { cert: server.cert, key: server.key, ca: ca.cert, clientCa: ca.cert, probe: client } });
  }, 60_000);

  afterAll(async () => {
    for (const s of stores) await s.close().catch(() => undefined);
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const url = (query: string) => `etcd+https://${etcd.hostPort}/tls?${query}`;

  test('with the CA and a client certificate: reads, writes, watches and leases work', async () => {
    const store = await openStore(url(`ca=${ca.cert}&cert=${client.cert}&key=${client.key}`));
    stores.push(store);
    const put = await store.put('/k', 'v');
    expect((await store.get('/k'))?.value).toBe('v');
    const lease = await store.grantLease(5);
    await store.put('/leased', 'x', { lease: lease.id });
    const watch = store.watch({ prefix: '/', fromRevision: put.revision })[Symbol.asyncIterator]();
    const first = await watch.next();
    expect(first.done).toBe(false);
    expect(first.value?.events[0]?.kv.key).toBe('/k');
    await watch.return?.();
  });

  test('leader election runs over the same TLS settings', async () => {
    let elected!: () => void;
    const won = new Promise<void>((r) => (elected = r));
    const leadership = await runForLeader(url(`ca=${ca.cert}&cert=${client.cert}&key=${client.key}`), { ttlSeconds: 2, onElected: () => elected(), onDeposed: async () => undefined });
    try {
      await won;
      expect(leadership.isLeader()).toBe(true);
    } finally {
      await leadership.stop();
    }
  });

  test('cca server on an etcd+https:// store is elected and runs the controllers', async () => {
    const server = await startServer({ store: url(`ca=${ca.cert}&cert=${client.cert}&key=${client.key}`), port: 0, host: '127.0.0.1', openReads: true, workers: 1, version: 'test', leaderTtlSeconds: 2 });
    try {
      await waitFor('leading', () => server.leading(), 15_000);
      expect((await fetch(`${server.url}/v1/services`)).status).toBe(200);
      // It leads through the election (a campaign key beside the prefix), not by default.
      const target = parseEtcdUrl(url(`ca=${ca.cert}&cert=${client.cert}&key=${client.key}`));
      const raw = new Etcd3({ ...etcdConnection(target) });
      try {
        expect(await raw.namespace(electionNamespace(target.prefix)).getAll().keys()).toHaveLength(1);
      } finally {
        raw.close();
      }
    } finally {
      await server.stop();
    }
  }, 30_000);

  const refusal = async (query: string): Promise<CcaError> => {
    const e: unknown = await openStore(url(query), { etcd: { dialTimeoutMs: 3_000, callTimeoutMs: 3_000 } }).then(
      (s) => s.close(),
      (err: unknown) => err,
    );
    expect(isCcaError(e)).toBe(true);
    return e as CcaError;
  };

  test('a CA that did not sign etcd’s certificate is CCA-E0140 (TLS), not a plain outage', async () => {
    const e = await refusal(`ca=${stranger.cert}&cert=${client.cert}&key=${client.key}`);
    expect(e.code).toBe('CCA-E0140');
    expect(e.message).toContain(`the TLS connection to the etcd store at https://${etcd.hostPort} failed: unable to verify the first certificate`);
    expect(e.diagnostic.fix).toContain('ca=');
  });

  test('no client certificate, when etcd requires one, is CCA-E0140', async () => {
    const e = await refusal(`ca=${ca.cert}`);
    expect(e.code).toBe('CCA-E0140');
    expect(e.message).toMatch(/failed: .*bad certificate/);
    expect(e.diagnostic.fix).toContain('cert= and key=');
  });

  test('a missing or non-PEM file is CCA-E0004 naming it', async () => {
    await expect(openStore(url(`ca=${join(dir, 'nope.pem')}`))).rejects.toThrow(join(dir, 'nope.pem'));
    expect(await codeOf(openStore(url(`ca=${join(dir, 'nope.pem')}`)))).toBe('CCA-E0004');
    expect(await codeOf(openStore(url(`ca=${ca.cert}&cert=${client.key}&key=${client.key}`)))).toBe('CCA-E0004');
  });
});
