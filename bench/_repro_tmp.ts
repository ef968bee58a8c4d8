import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../db/postgres/embedded.js';
const runs = Number(process.argv[2] ?? 10);
for (let i = 0; i < runs; i++) {
  const dir = mkdtempSync('/tmp/repro-');
  const logs: string[] = [];
  const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), port: 56000 + i, persistent: false, onLog: (l: string) => logs.push(l) } as any);
  mkdirSync(join(dir, 'prof'));
  const port = 57000 + i;
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--store', pg.url, '--port', String(port), '--workers', '2'], {
    env: { ...process.env, CCA_ADMIN_TOKEN: 'cca_admin_' + 'A'.repeat(43), CCA_JOIN_TOKEN: 'cca_join_' + 'J'.repeat(43), NODE_OPTIONS: `--import ${join(process.cwd(), 'bench/cpu-profile.mjs')}`, CCA_CPU_PROFILE_DIR: join(dir, 'prof') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b)); child.stderr.on('data', (b) => (out += b));
  const t0 = Date.now();
  let ok = false;
  while (Date.now() - t0 < 40_000 && child.exitCode === null) {
    try { const r = await fetch(`http://127.0.0.1:${port}/healthz`); if (r.status < 500) { ok = true; break; } } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  console.log(`run ${i}: ${ok ? 'up' : 'FAILED'} in ${Date.now() - t0} ms`);
  if (!ok) { console.log(out.slice(-2000)); console.log(logs.join('').split('\n').filter((l) => /deadlock|DETAIL|STATEMENT|ERROR|Process/.test(l)).join('\n').slice(-6000)); }
  child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1500));
  child.kill('SIGKILL');
  await pg.stop();
}
