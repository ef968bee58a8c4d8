/**
 * npm run bench:start — how fast a server pod starts and how much memory it holds, run as
 * TypeScript through tsx (a development checkout) and compiled (`npm run build`, what the
 * package and the image run). Each run spawns `node bin/cca.mjs server` (CCA_COMPILED=1 for the
 * compiled one) on a fresh SQLite file and measures spawn → first /readyz 200, then the RSS of
 * the pod and its children (esbuild's service, when the console is served) once ready and once
 * the console's page and a shared module have been served. Runs alternate between the modes.
 * Prints a table and, last, one JSON line.
 *
 *   BENCH_RUNS=5 (per mode)   BENCH_STORE=sqlite:… | postgres://… (default: a fresh SQLite file per run)
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort } from '../test/support/postgres-server.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const root = path.resolve(import.meta.dirname, '..');
type Mode = 'tsx' | 'compiled';

/** RSS bytes of a process and every descendant, from /proc. */
async function treeRss(pid: number): Promise<number> {
  const children = new Map<number, number[]>();
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const stat = await readFile(`/proc/${d}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.split(') ')[1]?.split(' ')[1]);
    if (ppid) children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
  }
  let total = 0;
  const walk = async (p: number): Promise<void> => {
    const status = await readFile(`/proc/${p}/status`, 'utf8').catch(() => '');
    total += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    for (const c of children.get(p) ?? []) await walk(c);
  };
  await walk(pid);
  return total;
}

async function once(mode: Mode, dir: string, i: number): Promise<{ readyMs: number; rssReady: number; rssConsole: number }> {
  const port = await freePort();
  const store = process.env.BENCH_STORE ?? `sqlite:${path.join(dir, `${mode}-${i}.db`)}`;
  const t0 = performance.now();
  const pod = spawn(process.execPath, ['bin/cca.mjs', 'server', '--store', store, '--port', String(port), '--workers', '2'], {
    cwd: root,
    stdio: 'ignore',
    env: { ...process.env, CCA_COMPILED: mode === 'compiled' ? '1' : '0' },
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    for (;;) {
      if (pod.exitCode !== null) throw new Error(`the ${mode} pod exited (${pod.exitCode}) before it was ready`);
      if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const readyMs = performance.now() - t0;
    const rssReady = await treeRss(pod.pid!);
    for (const p of ['/', '/src/core/keys.js', '/src/jobs/sim/world.js']) await (await fetch(`${url}${p}`)).arrayBuffer();
    const rssConsole = await treeRss(pod.pid!);
    return { readyMs, rssReady, rssConsole };
  } finally {
    const exited = new Promise((r) => pod.once('exit', r));
    pod.kill('SIGTERM');
    await exited;
  }
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mib = (b: number) => (b / 2 ** 20).toFixed(0);

async function main() {
  if (!existsSync(path.join(root, 'dist', 'cli', 'main.js')) || !existsSync(path.join(root, 'dist', 'console', 'modules.json'))) {
    console.error('no dist/: run `npm run build` first');
    process.exitCode = 2;
    return;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-bench-start-'));
  const runs: Record<Mode, { readyMs: number; rssReady: number; rssConsole: number }[]> = { tsx: [], compiled: [] };
  try {
    for (let i = 0; i < RUNS; i++) for (const mode of ['tsx', 'compiled'] as const) runs[mode].push(await once(mode, dir, i));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const summary = Object.fromEntries(
    (['tsx', 'compiled'] as const).map((m) => [m, { readyMs: Math.round(median(runs[m].map((r) => r.readyMs))), rssReadyMiB: Number(mib(median(runs[m].map((r) => r.rssReady)))), rssConsoleMiB: Number(mib(median(runs[m].map((r) => r.rssConsole)))) }]),
  ) as Record<Mode, { readyMs: number; rssReadyMiB: number; rssConsoleMiB: number }>;
  console.log(`pod start, median of ${RUNS} runs per mode (load ${os.loadavg()[0]!.toFixed(1)})`);
  console.log('mode      spawn → /readyz   RSS ready   RSS after console');
  for (const m of ['tsx', 'compiled'] as const) {
    const s = summary[m];
    console.log(`${m.padEnd(9)} ${`${s.readyMs} ms`.padStart(15)}   ${`${s.rssReadyMiB} MiB`.padStart(9)}   ${`${s.rssConsoleMiB} MiB`.padStart(17)}`);
  }
  console.log(JSON.stringify({ bench: 'start', runs: RUNS, load: Number(os.loadavg()[0]!.toFixed(1)), ...summary, readyRatio: Number((summary.compiled.readyMs / summary.tsx.readyMs).toFixed(2)) }));
}

await main();
