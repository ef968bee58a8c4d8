import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { adminApi, killLeftoverWorkloads, tempDir, type Json } from './support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';
import { nodeEntry } from '../../agent/node-entry.js';

/**
 * Endpoints end to end: the real server (handlers + controllers) and a real agent process
 * on the process runtime, busybox httpd as the workload. A replica with an http readiness
 * check joins `/endpoints/web`, the load-balancer script renders it, the served file is
 * removed and the replica leaves (the script follows); a liveness failure restarts a
 * replica under a new id with the reason in `why`.
 */
const root = join(import.meta.dirname, '..', '..');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const haveBusybox = needs('busybox');

describe.runIf(haveBusybox)('endpoints on the process runtime', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('readiness: joins when /ready.html serves, leaves when it is removed; the nginx upstream follows; liveness restarts with a reason', async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    cleanups.push(() => server.stop());
    const tmp = tempDir('endpoints-e2e');
    const state = join(tmp.dir, 'agent');
    const www = join(tmp.dir, 'www');
    const wwwLive = join(tmp.dir, 'www-live');
    mkdirSync(www);
    mkdirSync(wwwLive);
    writeFileSync(join(www, 'ready.html'), 'ready\n');
    writeFileSync(join(wwwLive, 'live.html'), 'alive\n');
    const agent = spawn(process.execPath, [...nodeEntry(import.meta.url, '../../agent/main'), '--server', server.url, '--node', 'p1', '--token', JOIN, '--runtime', 'process', '--state-dir', state, '--address', '127.0.0.1', '--cpu', '4', '--memory', '4Gi'], { cwd: root, stdio: ['ignore', 'ignore', openSync(join(tmp.dir, 'agent.log'), 'w')] });
    cleanups.push(async () => {
      const exited = new Promise((r) => agent.once('exit', r));
      agent.kill('SIGKILL');
      await exited; // before the server stops: no request of its lands on a closed store
      // Workloads outlive their agent by design: end them (and their supervisors) by pid.
      const dir = join(state, 'replicas');
      killLeftoverWorkloads(dir);
      tmp.cleanup();
    });
    const api = adminApi(server.url, ADMIN);
    const [port, livePort] = [await freePort(), await freePort()];
    const spec = [
      'service web {',
      '  image    = "busybox:1.35"',
      `  command  = ["httpd", "-f", "-p", "127.0.0.1:${port}", "-h", "${www}"]`,
      '  replicas = 1',
      '  cpu      = 0.1',
      '  memory   = 32Mi',
      `  port http { container = ${port} }`,
      '  health readiness { http = "/ready.html" every = 1s timeout = 500ms failures = 1 }',
      '}',
      'service live {',
      '  image    = "busybox:1.35"',
      `  command  = ["httpd", "-f", "-p", "127.0.0.1:${livePort}", "-h", "${wwwLive}"]`,
      '  replicas = 1',
      '  cpu      = 0.1',
      '  memory   = 32Mi',
      '  stop_grace = 2s',
      `  port http { container = ${livePort} }`,
      '  health liveness { http = "/live.html" every = 1s timeout = 500ms failures = 2 }',
      '}',
      '',
    ].join('\n');
    const applied = await api('POST', '/v1/apply', spec);
    expect(applied.error).toBeUndefined();

    // Joins once ready, at the node's address with the declared port.
    const joined = await waitFor('web in its endpoints', async () => {
      const e = await api('GET', '/v1/services/web/endpoints');
      return e.endpoints?.length === 1 ? e : undefined;
    }, { timeoutMs: 40_000, everyMs: 200 });
    const replica = joined.endpoints[0].replica as string;
    expect(joined.endpoints[0]).toMatchObject({ node: 'p1', address: '127.0.0.1', ports: { http: port } });
    expect(await (await fetch(`http://127.0.0.1:${port}/ready.html`)).text()).toBe('ready\n');

    // The load-balancer script, once: renders the upstream and runs the reload command.
    const out = join(tmp.dir, 'web-upstream.conf');
    const reloaded = join(tmp.dir, 'reloaded');
    const lbArgs = [join(root, 'fixtures/lb/endpoints-to-upstream.mjs'), '--server', server.url, '--token', ADMIN, '--service', 'web', '--out', out, '--reload', `echo reloaded >> '${reloaded}'`];
    const once = await new Promise<number>((resolve) => spawn(process.execPath, [...lbArgs, '--once'], { stdio: 'ignore' }).once('exit', (c) => resolve(c ?? -1)));
    expect(once).toBe(0);
    expect(readFileSync(out, 'utf8')).toContain(`upstream web {\n    server 127.0.0.1:${port}; # ${replica} on p1\n}`);
    expect(readFileSync(reloaded, 'utf8')).toBe('reloaded\n');
    const haproxy = join(tmp.dir, 'web-backend.cfg');
    const hp = await new Promise<number>((resolve) =>
      spawn(process.execPath, [join(root, 'fixtures/lb/endpoints-to-upstream.mjs'), '--server', server.url, '--token', ADMIN, '--service', 'web', '--out', haproxy, '--format', 'haproxy', '--once'], { stdio: 'ignore' }).once('exit', (c) => resolve(c ?? -1)),
    );
    expect(hp).toBe(0);
    expect(readFileSync(haproxy, 'utf8')).toContain(`backend web\n    balance roundrobin\n    server ${replica} 127.0.0.1:${port}\n`);

    // Following the watch: the file changes when the replica leaves.
    const follower: ChildProcess = spawn(process.execPath, lbArgs, { stdio: 'ignore' });
    cleanups.push(() => void follower.kill('SIGKILL'));
    const removedAt = Date.now();
    rmSync(join(www, 'ready.html'));
    const left = await waitFor('web out of its endpoints', async () => {
      const e = await api('GET', '/v1/services/web/endpoints');
      return e.endpoints?.length === 0 ? e : undefined;
    }, { timeoutMs: 20_000, everyMs: 200 });
    expect(left.service).toBe('web');
    // A figure, not a threshold: readiness probes every 1 s, the API polled every 200 ms.
    console.log(`endpoints e2e: the replica left ${Date.now() - removedAt} ms after /ready.html was removed (readiness every 1 s, failures = 1)`);
    await waitFor('the upstream file follows', () => readFileSync(out, 'utf8').includes('no ready endpoints'), { timeoutMs: 10_000, everyMs: 100 });
    await waitFor('reloaded after the change', () => readFileSync(reloaded, 'utf8') === 'reloaded\nreloaded\n', { timeoutMs: 10_000, everyMs: 100 });
    const why = await api('GET', '/v1/why/service/web');
    expect(why.chain[0].decision.reasons).toEqual([`${replica} is out: readiness failing (http /ready.html on http) on p1`]);
    expect(why.complete).toBe(true);
    // Failing readiness restarts nothing: the same replica still runs.
    const replicas = (await api('GET', '/v1/replicas?service=web')).replicas as Json[];
    expect(replicas.map((r) => [r.id, r.state])).toEqual([[replica, 'running']]);
    writeFileSync(join(www, 'ready.html'), 'ready again\n');
    await waitFor('web back in its endpoints', async () => (await api('GET', '/v1/services/web/endpoints')).endpoints?.[0]?.replica === replica, { timeoutMs: 20_000, everyMs: 200 });

    // Liveness: the agent stops the replica, the replica controller replaces it (new id) with the reason.
    const first = await waitFor('live running', async () => {
      const rs = (await api('GET', '/v1/replicas?service=live')).replicas as Json[];
      return rs.length === 1 && rs[0]!.state === 'running' && rs[0]!.health?.liveness === 'passing' ? (rs[0]!.id as string) : undefined;
    }, { timeoutMs: 30_000, everyMs: 200 });
    rmSync(join(wwwLive, 'live.html'));
    // A retired record is deleted once released: its replacement's reason keeps the story.
    const replacement = await waitFor('live replaced', async () => {
      const all = (await api('GET', '/v1/replicas?service=live&all=1')).replicas as Json[];
      return all.find((r) => r.id !== first && String(r.reason).startsWith(`replaces ${first} `));
    }, { timeoutMs: 30_000, everyMs: 200 }).catch(async (e) => {
      console.log(readFileSync(join(tmp.dir, 'agent.log'), 'utf8').slice(-3000));
      throw e;
    });
    writeFileSync(join(wwwLive, 'live.html'), 'alive again\n');
    expect(replacement.reason).toBe(`replaces ${first} (failed with code 143 on p1 (restart always): liveness failed: http GET /live.html on port ${livePort} did not pass 2 time(s) in a row, so the agent stopped replica ${first})`);
    const wl = await api('GET', `/v1/why/replica/${first}`);
    expect(wl.complete).toBe(true);
    expect((wl.chain as Json[]).map((l) => l.decision.action).some((a) => /^retired: failed with code 143 on p1 \(restart always\): liveness failed: /.test(a))).toBe(true);
    await waitFor('a new live replica runs and passes liveness', async () => {
      const rs = ((await api('GET', '/v1/replicas?service=live')).replicas as Json[]).filter((r) => r.id !== first && r.state === 'running' && r.health?.liveness === 'passing');
      return rs.length === 1;
    }, { timeoutMs: 30_000, everyMs: 200 });
  }, 150_000);
});
