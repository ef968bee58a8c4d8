/**
 * npm run bench:server — one server pod (a real process) on Postgres, loaded from this
 * process: (a) SSE watch fan-out, (b) many agents keeping alive and long-polling, (c) apply
 * latency under that load. Prints a table and, last, one JSON line.
 *
 *   BENCH_WATCHERS=1000  BENCH_AGENTS=1000  BENCH_RATE=1000 (writes/s)  BENCH_SECONDS=10
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startEmbeddedPostgres } from '../db/postgres/embedded.js';
import { PostgresStore } from '../db/postgres/store.js';
import { newRoleToken } from '../handlers/auth.js';
import { freePort } from '../test/support/postgres-server.js';

const WATCHERS = Number(process.env.BENCH_WATCHERS ?? 1000);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 1000);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);


const pct = (xs: number[], p: number) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};

/** CPU seconds (user+sys) and RSS bytes of a process, from /proc. */
async function usage(pid: number): Promise<{ cpu: number; rss: number }> {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]);
  const rss = Number(stat[21]) * 4096;
  return { cpu: ticks / 100, rss };
}

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-bench-server-'));
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port: await freePort(), persistent: false });
  const admin = newRoleToken('admin');
  const join = newRoleToken('join');
  const port = await freePort();
  const pod = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--store', pg.url, '--port', String(port), '--workers', '2'], {
    env: { ...process.env, CCA_ADMIN_TOKEN: admin, CCA_JOIN_TOKEN: join },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const store = await PostgresStore.open(pg.url);
  const results: Record<string, number> = {};
  try {
    // (a) watch fan-out
    const committed = new Map<string, number>();
    const lat: number[] = [];
    let delivered = 0;
    const ac = new AbortController();
    const from = (await store.revision()) + 1;
    const streams = Array.from({ length: WATCHERS }, async () => {
      const r = await fetch(`${url}/v1/watch?prefix=/bench/&from=${from}`, { headers: { authorization: `Bearer ${admin}` }, signal: ac.signal });
      const reader = r.body!.getReader();
      const dec = new TextDecoder();
      let buf = '';
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i: number;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const data = frame.split('\n').find((l) => l.startsWith('data: '));
            if (!frame.includes('event: batch') || !data) continue;
            const now = performance.now();
            // The generator shares the machine with the pod: pick the values out without a full parse.
            for (const m of data.matchAll(/"value":"(v\d+)"/g)) {
              const t = committed.get(m[1]!);
              if (t !== undefined) lat.push(Math.max(0, now - t));
              delivered++;
            }
          }
        }
      } catch {
        // aborted at the end
      }
    });
    await new Promise((r) => setTimeout(r, 2_000));
    const t0 = performance.now();
    const total = RATE * SECONDS;
    const writes: Promise<void>[] = [];
    const cpuBefore = await usage(pod.pid!);
    for (let i = 0; i < total; i++) {
      const wait = t0 + (i * 1000) / RATE - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const value = `v${i}`;
      writes.push(store.put(`/bench/${i % 500}`, value).then(() => void committed.set(value, performance.now())));
    }
    await Promise.all(writes);
    const writeSeconds = (performance.now() - t0) / 1000;
    const until = performance.now() + 15_000;
    while (delivered < total * WATCHERS && performance.now() < until) await new Promise((r) => setTimeout(r, 100));
    const cpuAfter = await usage(pod.pid!);
    const elapsed = (performance.now() - t0) / 1000;
    ac.abort();
    await Promise.allSettled(streams);
    results['watch.watchers'] = WATCHERS;
    results['watch.writes_per_s'] = total / writeSeconds;
    results['watch.delivered_events_per_s'] = delivered / elapsed;
    results['watch.delivered_fraction'] = delivered / (total * WATCHERS);
    results['watch.p50_ms'] = pct(lat, 50);
    results['watch.p99_ms'] = pct(lat, 99);
    results['watch.pod_cpu_cores'] = (cpuAfter.cpu - cpuBefore.cpu) / elapsed;

    // (b) agents: register, then keepalive every 3 s and long-poll
    const call = async (method: string, p: string, token: string, body?: unknown) => {
      const r = await fetch(`${url}${p}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
      return (await r.json()) as Record<string, number | string>;
    };
    const agents: { node: string; cred: string; lease: number }[] = [];
    for (let i = 0; i < AGENTS; i += 50) {
      agents.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(50, AGENTS - i) }, async (_, j) => {
            const node = `bench-${i + j}`;
            const cred = (await call('POST', '/v1/agent/enroll', join, { node })).credential as string;
            const reg = await call('POST', `/v1/agent/nodes/${node}/register`, cred, { name: node, zone: `z${(i + j) % 3}`, capacity: { cpuMillis: 4000, memoryBytes: 2 ** 33 }, leaseTtlSeconds: 30 });
            return { node, cred, lease: reg.lease as number };
          }),
        )),
      );
    }
    const stop = new AbortController();
    let polls = 0;
    let keepalives = 0;
    const loops = agents.map(async (a, i) => {
      let after = 0;
      await new Promise((r) => setTimeout(r, (i * 3000) / AGENTS));
      let next = performance.now();
      while (!stop.signal.aborted) {
        try {
          if (performance.now() >= next) {
            await call('POST', `/v1/agent/nodes/${a.node}/keepalive`, a.cred, { lease: a.lease });
            keepalives++;
            next = performance.now() + 3_000;
          }
          const r = await fetch(`${url}/v1/agent/nodes/${a.node}/assignments?after=${after}&waitMs=3000`, { headers: { authorization: `Bearer ${a.cred}` }, signal: stop.signal });
          after = ((await r.json()) as { revision: number }).revision;
          polls++;
        } catch {
          if (!stop.signal.aborted) await new Promise((r) => setTimeout(r, 200));
        }
      }
    });
    await new Promise((r) => setTimeout(r, 4_000));
    const b0 = await usage(pod.pid!);
    const tb = performance.now();
    // (c) apply latency under the agent load
    const applyLat: number[] = [];
    for (let i = 0; i < 40; i++) {
      const s = performance.now();
      await fetch(`${url}/v1/apply`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'text/x-cca' },
        body: `service bench { image = "busybox:1.35"\n replicas = 0\n env = { N = "${i}" } }\n`,
      }).then((r) => r.json());
      applyLat.push(performance.now() - s);
      await new Promise((r) => setTimeout(r, (SECONDS * 1000) / 40));
    }
    const b1 = await usage(pod.pid!);
    const tbs = (performance.now() - tb) / 1000;
    stop.abort();
    await Promise.allSettled(loops);
    results['agents'] = agents.length;
    results['agents.pod_cpu_cores'] = (b1.cpu - b0.cpu) / tbs;
    results['agents.pod_rss_mb'] = b1.rss / 2 ** 20;
    results['agents.keepalives_per_s'] = keepalives / ((performance.now() - tb) / 1000);
    results['agents.polls_per_s'] = polls / ((performance.now() - tb) / 1000);
    results['apply.p50_ms'] = pct(applyLat, 50);
    results['apply.p99_ms'] = pct(applyLat, 99);
  } finally {
    await store.close();
    pod.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    pod.kill('SIGKILL');
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  }
  console.log(`server benchmark: one pod, ${os.cpus().length} cores shared with Postgres and the load generator`);
  for (const [k, v] of Object.entries(results)) console.log(`${k.padEnd(30)} ${Number.isInteger(v) ? v : v.toFixed(2)}`);
  console.log(JSON.stringify({ bench: 'server', results }));
  process.exit(0);
}

await main();
