import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import type { AgentClient } from '../../agent/client.js';
import type { NetnsManager } from '../../agent/netns.js';
import { PolicyFollower } from '../../agent/network-policy.js';
import type { NetworkBundle } from '../../core/model/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const ports = [{ name: 'pg', container: 5432, protocol: 'tcp' as const }];
const spec = { network: { allow: [{ service: 'api', port: 'pg' }] }, ports };
const bundle: NetworkBundle = {
  rules: { node: 'n1', at: 1, replicas: [{ replica: 'db-1', service: 'db', policy: 'allow' }] },
  policies: [{ service: 'db', allow: [{ service: 'api', port: 'pg' }], source: 'spec', at: 1 }],
  addresses: [{ service: 'api', addresses: ['10.88.0.2', '10.88.0.3'], total: 2, at: 1 }],
};

/** A follower over a fake namespace manager (records each script) and a client answering `answer`. */
function follower(dir: string, answer: () => Promise<{ revision: number; changed: boolean; bundle: NetworkBundle }>) {
  const applied: string[] = [];
  let closed = false;
  const netns = { opts: { dir }, gateway: '10.88.0.1', info: () => ({}), apply: async (_r: string, script: string) => void applied.push(script) } as unknown as NetnsManager;
  const client = { credential: 'c', network: async () => {
    try {
      return await answer();
    } finally {
      closed = true; // one poll is enough
    }
  } } as unknown as AgentClient;
  const f = new PolicyFollower({ client, netns, replicas: () => [{ replica: 'db-1', spec }], pollWaitMs: 0, isClosed: () => closed, sleep: async () => undefined, log: () => undefined, event: () => undefined });
  return { f, applied };
}

test('rule 8: an agent restarted while the server is away re-applies the bundle it last knew, never the deny-all fallback', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cca-policy-'));
  dirs.push(dir);
  const first = follower(dir, async () => ({ revision: 5, changed: true, bundle }));
  await first.f.loop();
  expect(first.applied.at(-1)).toContain('tcp dport 5432 ip saddr { 10.88.0.2, 10.88.0.3 } accept');
  // A new agent on the same state directory; the server does not answer.
  const second = follower(dir, async () => {
    throw new Error('unreachable');
  });
  await second.f.loop();
  await second.f.sync();
  expect(second.applied).toHaveLength(1);
  expect(second.applied[0]).toContain('ip saddr { 10.88.0.2, 10.88.0.3 } accept');
  // Without a saved bundle the same agent would deny everything but the node.
  const fresh = mkdtempSync(join(tmpdir(), 'cca-policy-'));
  dirs.push(fresh);
  const third = follower(fresh, async () => {
    throw new Error('unreachable');
  });
  await third.f.sync();
  expect(third.applied[0]).not.toContain('10.88.0.2');
});

test("an agent upgraded while the server is away enforces the older agent's saved rule set until the first bundle arrives", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cca-policy-'));
  dirs.push(dir);
  const old = { node: 'n1', at: 1, replicas: [{ replica: 'db-1', service: 'db', policy: 'allow', rules: [{ port: 5432, protocol: 'tcp', services: ['api'], from: ['10.88.0.7'] }] }] };
  writeFileSync(join(dir, '.rules.json'), JSON.stringify(old));
  const away = follower(dir, async () => {
    throw new Error('unreachable');
  });
  await away.f.sync();
  expect(away.applied[0]).toContain('tcp dport 5432 ip saddr { 10.88.0.7 } accept');
  const back = follower(dir, async () => ({ revision: 5, changed: true, bundle }));
  await back.f.loop();
  expect(back.applied.at(-1)).toContain('ip saddr { 10.88.0.2, 10.88.0.3 } accept');
});

test('a new bundle in an answer that says unchanged is still applied (an address set changed as the long poll ended)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cca-policy-'));
  dirs.push(dir);
  const moved: NetworkBundle = { ...bundle, addresses: [{ service: 'api', addresses: ['10.88.0.9'], total: 1, at: 2 }] };
  const answers = [
    { revision: 5, changed: true, bundle },
    // The server's watch saw nothing and timed out; the new address set committed before its read.
    { revision: 9, changed: false, bundle: moved },
  ];
  const applied: string[] = [];
  const netns = { opts: { dir }, gateway: '10.88.0.1', info: () => ({}), apply: async (_r: string, script: string) => void applied.push(script) } as unknown as NetnsManager;
  const client = { credential: 'c', network: async () => answers.shift()! } as unknown as AgentClient;
  const f = new PolicyFollower({ client, netns, replicas: () => [{ replica: 'db-1', spec }], pollWaitMs: 0, isClosed: () => answers.length === 0, sleep: async () => undefined, log: () => undefined, event: () => undefined });
  await f.loop();
  await f.sync();
  expect(applied.at(-1)).toContain('ip saddr { 10.88.0.9 } accept');
});
