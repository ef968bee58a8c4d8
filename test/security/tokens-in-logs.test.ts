import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { waitFor } from '../support/wait.js';

/** Tokens appear in a server's output once, on the start that created them; never again. */
const dir = mkdtempSync(join(tmpdir(), 'cca-token-logs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function runServerOnce(store: string): Promise<string> {
  const child = spawn(process.execPath, ['bin/cca.mjs', 'server', '--store', store, '--port', '0', '--workers', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  await waitFor('the server to say \'listening on\'', async () => out, (o) => o.includes('listening on') || child.exitCode !== null, 30_000);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return out;
}

test('cca server prints the bootstrap tokens on the first start only', async () => {
  const store = `sqlite:${join(dir, 'store.db')}`;
  const first = await runServerOnce(store);
  expect(first, first).toMatch(/cca_admin_[\w-]{43}/);
  expect(first).toMatch(/cca_join_[\w-]{43}/);
  const second = await runServerOnce(store);
  expect(second, second).toContain('listening on');
  expect(second).not.toMatch(/cca_(admin|join|node|reader|deployer)_/);
}, 90_000);
