import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, test } from 'vitest';
import { z } from 'zod';
import { createTestDatabase } from '../support/databases.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

const ms = z.number().nonnegative();
const phase = z.object({
  n: z.number().int().positive(), p50Ms: ms, p99Ms: ms, dryRunP99Ms: ms, writeP99Ms: ms, select1P50Ms: ms, select1P99Ms: ms, healthzP99Ms: ms,
  commits: z.object({ batches: z.number().int().nonnegative(), checkouts: z.number().int().positive(), busySeconds: z.number().nonnegative() }),
});
const lastLine = z.object({
  bench: z.literal('apply-latency'),
  idle: phase,
  rolling: phase,
  rollSeconds: z.number().positive().nullable(),
  loadAverage: z.array(z.number()).length(3),
});

// Kept runnable, not timed: a tiny cluster through the same code as the full run.
test('bench/apply-latency runs at a tiny size and ends with its JSON line', async () => {
  const db = await createTestDatabase('bench-apply');
  dbs.push(db);
  const args = ['--import', 'tsx', 'bench/apply-latency.ts', '--agents', '2', '--replicas', '4', '--samples', '3', '--surge', '2'];
  const { code, out, err } = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, DATABASE_URL: db.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (c) => resolve({ code: c, out, err }));
  });
  expect(code, err.slice(-2000)).toBe(0);
  const lines = out.trim().split('\n');
  expect(lines.some((l) => /^idle\s+3\s/.test(l)), out).toBe(true);
  const json = lastLine.parse(JSON.parse(lines.at(-1)!));
  expect(json.idle.n).toBe(3);
  // Each apply's write is at least one committed batch, and every request read through the pool.
  expect(json.idle.commits.batches).toBeGreaterThanOrEqual(3);
  expect(lines.some((l) => /^the two requests: idle dry run .* floors: SELECT 1 /.test(l)), out).toBe(true);
}, 300_000);
