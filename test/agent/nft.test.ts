import { describe, expect, test } from 'vitest';
import { enforcedFor } from '../../agent/network-policy.js';
import { fallbackPolicy, renderPolicy } from '../../agent/nft.js';
import { checkPrefix, defaultPrefix, parseCidr } from '../../agent/netns.js';
import type { NetworkBundle, NetworkRules } from '../../core/model/index.js';

describe('nft ruleset renderer', () => {
  test('an open replica: the table is recreated with an accepting input chain', () => {
    expect(renderPolicy({ policy: 'open', rules: [] }, '10.88.0.1')).toBe(
      ['table inet cca', 'delete table inet cca', 'table inet cca {', '  chain input {', '    type filter hook input priority 0; policy accept;', '  }', '}', ''].join('\n'),
    );
  });

  test('a policed replica: default drop; loopback, replies and the node admitted; one rule per allowance', () => {
    const text = renderPolicy(
      {
        policy: 'allow',
        rules: [
          { port: 8080, protocol: 'tcp', services: ['api'], from: ['10.88.0.3', '10.88.0.4'] },
          { port: 53, protocol: 'udp', services: ['dns'], from: ['10.88.1.9'] },
          { services: ['ops'], from: ['10.88.0.7'] },
          { port: 9000, protocol: 'tcp', services: ['nobody'], from: [] },
        ],
      },
      '10.88.0.1',
    );
    expect(text.split('\n')).toEqual([
      'table inet cca',
      'delete table inet cca',
      'table inet cca {',
      '  chain input {',
      '    type filter hook input priority 0; policy drop;',
      '    ct state established,related accept',
      '    iif "lo" accept',
      '    ip saddr 10.88.0.1 accept',
      '    tcp dport 8080 ip saddr { 10.88.0.3, 10.88.0.4 } accept',
      '    udp dport 53 ip saddr { 10.88.1.9 } accept',
      '    ip saddr { 10.88.0.7 } accept',
      '  }',
      '}',
      '',
    ]);
  });

  test('anything that is not an IPv4 address is left out, never spliced into the script', () => {
    const text = renderPolicy({ policy: 'allow', rules: [{ port: 80, protocol: 'tcp', services: ['x'], from: ['10.0.0.2 } accept; flush ruleset; {', '::1', '300.1.1.1', '10.0.0.3'] }] }, 'gw; flush ruleset');
    expect(text).toContain('tcp dport 80 ip saddr { 10.0.0.3 } accept');
    expect(text).not.toContain('flush');
    expect(text).not.toContain('::1');
    expect(text).not.toContain('300.1.1.1');
  });

  test('a replica not listed yet: deny everything when its spec has a policy, else open', () => {
    const ports = [{ name: 'pg', container: 5432, protocol: 'tcp' as const }];
    const policed = { network: { allow: [{ service: 'api' }] }, ports };
    expect(fallbackPolicy(policed)).toEqual({ policy: 'allow', rules: [] });
    expect(fallbackPolicy({ network: { allow: [] } })).toEqual({ policy: 'open', rules: [] });
    const rules: NetworkRules = { node: 'n1', at: 0, replicas: [{ replica: 'db-1', service: 'db', policy: 'open' }] };
    const bundle: NetworkBundle = { rules, policies: [], addresses: [] };
    // The node's rule set wins over the spec the replica was placed with (a policy removed since).
    expect(enforcedFor(bundle, 'db-1', policed)).toEqual({ policy: 'open', rules: [] });
    expect(enforcedFor(bundle, 'db-2', policed)).toEqual({ policy: 'allow', rules: [] });
    expect(enforcedFor(undefined, 'db-2', { network: { allow: [] }, ports })).toEqual({ policy: 'open', rules: [] });
  });

  test("a policed replica: its service's policy in force, resolved against its placed ports, with the address sets it names", () => {
    const ports = [{ name: 'pg', container: 5432, protocol: 'tcp' as const }];
    // Placed with a policy admitting `other`; the service's policy in force now admits `api`.
    const placed = { network: { allow: [{ service: 'other', port: 'pg' }] }, ports };
    const rules: NetworkRules = { node: 'n1', at: 0, replicas: [{ replica: 'db-1', service: 'db', policy: 'allow' }] };
    const addresses = [
      { service: 'api', addresses: ['10.0.0.2', '10.0.0.3'], total: 2, at: 0 },
      { service: 'other', addresses: ['10.0.0.9'], total: 1, at: 0 },
    ];
    const policy = { service: 'db', allow: [{ service: 'api', port: 'pg' }, { service: 'other', port: 'admin' }], source: 'spec' as const, at: 0 };
    // `admin` is not a port the running replica declares: it admits nothing.
    expect(enforcedFor({ rules, policies: [policy], addresses }, 'db-1', placed)).toEqual({
      policy: 'allow',
      rules: [{ port: 5432, protocol: 'tcp', services: ['api'], from: ['10.0.0.2', '10.0.0.3'] }],
    });
    // No policy record yet (the controller writes it first, but a reader can be between): the placed spec's.
    expect(enforcedFor({ rules, policies: [], addresses }, 'db-1', { network: { allow: [{ service: 'other' }] }, ports })).toEqual({
      policy: 'allow',
      rules: [{ services: ['other'], from: ['10.0.0.9'] }],
    });
  });

  test('network flags: a /24 only, a short prefix, a default prefix per node', () => {
    expect(parseCidr('10.88.3.0/24')).toEqual({ base: '10.88.3', gateway: '10.88.3.1' });
    for (const bad of ['10.88.3.0/16', '10.88.3.1/24', '10.300.0.0/24', 'x']) expect(() => parseCidr(bad)).toThrow(/CCA-E0508/);
    expect(() => checkPrefix('Bad-Name')).toThrow(/CCA-E0508/);
    expect(() => checkPrefix('waytoolong1')).toThrow(/CCA-E0508/);
    expect(checkPrefix('t1')).toBe('t1');
    expect(defaultPrefix('n1')).toMatch(/^c[0-9a-f]{5}$/);
    expect(defaultPrefix('n1')).not.toBe(defaultPrefix('n2'));
  });
});

describe('an agent on the host network', () => {
  test('runs a policed replica but says, coded, that its policy is not enforced (CCA-E0529)', async () => {
    const { FakeRuntime } = await import('../../agent/runtime-fake.js');
    const { FakeAgentServer } = await import('./fake-server.js');
    const { startAgent, tempDir } = await import('./support.js');
    const { waitFor } = await import('../support/wait.js');
    const server = new FakeAgentServer();
    await server.listen();
    const state = tempDir('host-net');
    const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb' } });
    const a = await startAgent(server, runtime, state.dir);
    try {
      await waitFor('registration', () => server.tenureOf('n1'));
      server.assign('n1', 'db-1', { name: 'db', image: 'busybox:1.35', network: { allow: [{ service: 'api' }] } });
      server.assign('n1', 'web-1', { name: 'web', image: 'busybox:1.35' });
      await waitFor('both running', () => server.observation('n1', 'db-1')?.state === 'running' && server.observation('n1', 'web-1')?.state === 'running', 10_000);
      const lines = a.logs.filter((l) => l.startsWith('CCA-E0529'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('replica db-1');
      // Host networking: reached at the node's address, not an address of its own.
      expect(server.observation('n1', 'db-1')?.address).toBe('127.0.0.1');
    } finally {
      await a.agent.close();
      await server.close();
      await runtime.close();
      state.cleanup();
    }
  }, 20_000);
});

describe('network isolation tools', () => {
  test('a missing ip/nsenter/nft is a coded environment error (CCA-E0525), found before any replica starts', async () => {
    const { NetnsManager } = await import('../../agent/netns.js');
    const { tempDir } = await import('./support.js');
    const { isCcaError } = await import('../../core/diagnostics/index.js');
    const tmp = tempDir('tools');
    const path = process.env.PATH;
    process.env.PATH = tmp.dir; // nothing in it
    try {
      const err = await new NetnsManager({ prefix: 'tt', cidr: '10.240.0.0/24', dir: tmp.dir }).checkTools().catch((e: unknown) => e);
      expect(isCcaError(err, 'CCA-E0525')).toBe(true);
      expect((err as { diagnostic: { blame: string; params: { tool: string } } }).diagnostic.blame).toBe('environment');
      expect((err as { diagnostic: { params: { tool: string } } }).diagnostic.params.tool).toBe('ip');
    } finally {
      process.env.PATH = path;
      tmp.cleanup();
    }
  });
});
