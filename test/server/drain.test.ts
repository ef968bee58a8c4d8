import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test, vi } from 'vitest';
import { startServer, type RunningServer } from '../../server/start.js';
import { waitFor } from '../support/wait.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { freePort } from '../support/postgres-server.js';

/**
 * A pod restart is not an outage for the people watching: the old pod fails /readyz first,
 * ends its watch streams with a reconnect hint, finishes what it has; `cca get -w` resumes on
 * the new pod from the revision after the last one it saw.
 */
const dir = mkdtempSync(join(tmpdir(), 'cca-drain-'));
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const service = (name: string) => `service ${name} {\n  image = "busybox:1.35"\n  cpu = 0.1\n  memory = 16Mi\n}\n`;

test('SIGTERM drain: readyz fails first, watch streams get a retry hint, cca get -w resumes on the next pod', async () => {
  const store = `sqlite:${join(dir, 'store.db')}`;
  const port = await freePort();
  const base = { store, port, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 1, version: 'test', drainDelayMs: 400 };
  const url = `http://127.0.0.1:${port}`;
  // This test's own client may hold a keep-alive socket the old pod closed: a refused send is tried again.
  const apply = (name: string) =>
    waitFor('an apply to reach a pod',
      () => fetch(`${url}/v1/apply`, { method: 'POST', body: service(name), headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/x-cca' } }).then((r) => r.status, () => 0),
      (s) => s !== 0,
      10_000,
    );

  let a: RunningServer | undefined = await startServer(base);
  cleanups.push(() => a?.stop());
  const cli = spawn(process.execPath, ['bin/cca.mjs', 'get', 'services', '-w', '--server', url, '--token', ADMIN], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  cli.stdout.on('data', (d) => (out += d));
  cli.stderr.on('data', (d) => (out += d));
  cleanups.push(() => void cli.kill('SIGKILL'));
  await waitFor('the watch\'s first frame (no services)', async () => out, (o) => o.includes('no services') || cli.exitCode !== null, 20_000);
  expect(await apply('one')).toBe(200);
  await waitFor('the watch to show service one', async () => out, (o) => o.includes('one'), 20_000);

  // A raw stream, to read what the pod says as it goes.
  const raw = await fetch(`${url}/v1/watch?prefix=/services/`, { headers: { authorization: `Bearer ${ADMIN}` } });
  const rawText = raw.text();

  const stopping = a.stop();
  const ready = await fetch(`${url}/readyz`).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: { code?: string } } }));
  expect(ready.status).toBe(503);
  expect(ready.body.error?.code).toBe('CCA-E0663');
  await stopping;
  a = undefined;
  const said = await rawText;
  expect(said).toContain('retry: 500');
  expect(said).toContain('event: shutdown');

  // The next pod, same store and address: the watcher finds it by itself.
  const b = await startServer(base);
  cleanups.push(() => b.stop());
  expect(await apply('two')).toBe(200);
  await waitFor('the watch to show service two', async () => out, (o) => o.includes('two') || cli.exitCode !== null, 30_000);
  expect(out, out).toContain('two');
  expect(cli.exitCode, out).toBeNull();
}, 90_000);

test('a stopping pod answers the agents\' long polls in flight, then closes its store: no CCA-E0113', async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const pod = await startServer({ store: `sqlite:${join(dir, 'polls.db')}`, port, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 1, version: 'test', shutdownGraceMs: 3_000 });
  let stopped = false;
  cleanups.push(() => (stopped ? undefined : pod.stop()));
  // What the pod logs: a handler meeting a closed store prints its bug diagnostic there.
  const logged: string[] = [];
  const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(' ')));
  cleanups.push(() => spy.mockRestore());
  const post = (path: string, token: string, body: unknown) => fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const enrolled = (await (await post('/v1/agent/enroll', JOIN, { node: 'n1' })).json()) as { credential: string; revision: number };
  type Answer = { status: number; body: { changed?: boolean; requests?: unknown[]; error?: string } };
  const poll = (path: string): Promise<Answer> =>
    fetch(`${url}/v1/agent/nodes/n1/${path}`, { headers: { authorization: `Bearer ${enrolled.credential}` } }).then(
      async (r) => ({ status: r.status, body: (await r.json()) as Answer['body'] }),
      (e: unknown) => ({ status: 0, body: { error: String(e) } }),
    );
  // Long polls that would wait 60 s: the assignments (a store watch, then store reads) and the log requests.
  const polls = [poll(`assignments?after=${enrolled.revision}&waitMs=60000`), poll(`network?after=${enrolled.revision}&waitMs=60000`), poll('log-requests?waitMs=60000')];
  await waitFor('the long polls to wait in the pod', async () => (await (await fetch(`${url}/metrics`)).text()).match(/^cca_watchers\S* (\d+)/m)?.[1], (n) => Number(n) >= 2, 10_000);
  await pod.stop();
  stopped = true;
  const answers = await Promise.all(polls);
  expect(answers.map((a) => a.status), JSON.stringify(answers)).toEqual([200, 200, 200]);
  expect(answers[0]!.body.changed).toBe(false);
  expect(answers[2]!.body.requests).toEqual([]);
  expect(logged.filter((l) => l.includes('CCA-E')), logged.join('\n')).toEqual([]);
}, 60_000);
