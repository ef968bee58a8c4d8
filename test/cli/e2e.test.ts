import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { startServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { HttpTestAgent } from '../server/http-agent.js';
import { cca } from './harness.js';

/**
 * The whole system: a real server pod with its controllers (memory store, in-process
 * driver) and an agent over HTTP. `cca` applies, waits, reads and asks why with real
 * decisions, not seeded ones.
 */
describe('cca against a running system', () => {
  test('apply --wait converges; get and why show the real placement; an impossible service times out with the shortfall', async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 1, version: 'e2e' });
    const agent = new HttpTestAgent(server.url, JOIN, 'n1');
    try {
      await agent.start();
      const cwd = mkdtempSync(join(tmpdir(), 'cca-e2e-'));
      const env = { CCA_SERVER: server.url, CCA_TOKEN: ADMIN, CCA_STATE_DIR: cwd };
      const run = (argv: string[]) => cca(argv, { cwd, env });
      writeFileSync(join(cwd, 'web.cca'), 'service web {\n  image    = "busybox:1.35"\n  replicas = 2\n  cpu      = 0.25\n  memory   = 64Mi\n}\n');
      const applied = await run(['apply', 'web.cca', '--yes', '--wait', '--timeout', '20s']);
      expect(applied.stderr).not.toContain('error');
      expect(applied.stdout).toContain('converged: web 2/2 ready');
      expect(applied.code).toBe(0);

      const replicas = await run(['get', 'replicas', '-o', 'json']);
      const items = (JSON.parse(replicas.stdout) as { items: { name: string; node: string; state: string }[] }).items;
      expect(items.map((r) => [r.node, r.state])).toEqual([
        ['n1', 'running'],
        ['n1', 'running'],
      ]);
      const why = await run(['why', 'replica', items[0]!.name]);
      expect(why.code).toBe(0);
      expect(why.stdout).toMatch(/^why replica \S+: complete/);
      expect(why.stdout).toContain('placed on n1');
      expect(why.stdout).toMatch(/\/allocations\/n1 @0  \(absent when read\)/);
      expect(why.stdout).toMatch(/└─ \/services\/web at revision \d+ \(terminal; still present\)/);

      writeFileSync(join(cwd, 'big.cca'), 'service big {\n  image = "busybox:1.35"\n  cpu   = 64\n}\n');
      const big = await run(['apply', 'big.cca', '--yes', '--wait', '--timeout', '3s']);
      expect(big.code).toBe(2);
      expect(big.stderr).toContain('error CCA-E0709');
      expect(big.stderr).toMatch(/needs 64 cpu/);
      const pending = (JSON.parse((await run(['get', 'replicas', '--service', 'big', '-o', 'json'])).stdout) as { items: { name: string }[] }).items[0]!;
      const whyNot = await run(['why', 'replica', pending.name]);
      expect(whyNot.stdout).toContain('why not:');
      expect(whyNot.stdout).toMatch(/- 1 node has < 64 cpu free/);

      const deleted = await run(['delete', 'service', 'web', '--yes']);
      expect(deleted.code).toBe(0);
    } finally {
      await agent.stop();
      await server.stop();
    }
  });
});
