import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { buildKey } from '../../core/keys.js';
import { expectGolden } from './golden.js';
import { liveServers, seedAllocation, seedNode, seedReplica, type Live, type RunOptions } from './harness.js';

const open = liveServers();

/** A live server and a working directory holding the test's .cca files. */
async function setup() {
  const live = await open();
  const cwd = mkdtempSync(join(tmpdir(), 'cca-live-'));
  for (const f of ['web.cca', 'bad.cca']) copyFileSync(join('test/cli/files', f), join(cwd, f));
  const run = async (name: string | undefined, argv: string[], opts: RunOptions = {}) => {
    const r = await live.run(argv, { cwd, ...opts });
    if (name) expectGolden(name, argv, r);
    return r;
  };
  return { live, cwd, run };
}

describe('apply', () => {
  test('a local parse error is shown with file:line:col and caret, and nothing is sent', async () => {
    const { live, run } = await setup();
    expect((await run('apply-parse-error', ['apply', 'bad.cca'])).code).toBe(1);
    expect((await run('apply-parse-error-verbose', ['apply', 'bad.cca', '--verbose'])).code).toBe(1);
    const json = await run('apply-parse-error-json', ['apply', 'bad.cca', '-o', 'json']);
    expect(JSON.parse(json.stderr).diagnostics[0]).toMatchObject({ code: 'CCA-E0210', span: { file: 'bad.cca', line: 3 } });
    expect(live.requestIds).toEqual([]);
  });

  test('dry run shows the diff; --yes applies; a change diffs per field; unchanged says so', async () => {
    const { live, cwd, run } = await setup();
    expect((await run('apply-dry-run-new', ['apply', 'web.cca', '--dry-run'])).code).toBe(0);
    expect(await live.store.get(buildKey('service', 'web'))).toBeNull();
    expect((await run('apply-yes', ['apply', 'web.cca', '--yes'])).code).toBe(0);
    expect(await live.store.get(buildKey('service', 'web'))).not.toBeNull();
    expect((await run('apply-unchanged', ['apply', 'web.cca', '--yes'])).code).toBe(0);
    writeFileSync(join(cwd, 'web2.cca'), (await import('node:fs')).readFileSync(join(cwd, 'web.cca'), 'utf8').replace('replicas = 2', 'replicas = 3').replace('"8080"]', '"8081"]'));
    writeFileSync(join(cwd, 'api.cca'), 'service api {\n  image = "busybox:1.35"\n  after = [web]\n}\n');
    expect((await run('apply-dry-run-changed', ['apply', 'web2.cca', 'api.cca', '--dry-run'])).code).toBe(0);
    expect((await run('apply-dry-run-json', ['apply', 'web2.cca', '--dry-run', '-o', 'json'])).code).toBe(0);
    // Pruning web while api runs `after` it would leave a dangling dependency (CCA-E0305): drop the edge first.
    writeFileSync(join(cwd, 'api.cca'), 'service api {\n  image = "busybox:1.35"\n}\n');
    expect((await run('apply-prune-dry-run', ['apply', 'api.cca', '--prune', '--dry-run'])).code).toBe(0);
    const colour = await run(undefined, ['apply', 'web2.cca', '--dry-run'], { stdoutIsTTY: true });
    expect(colour.stdout).toContain('\u001b[33m~ service web (rolling update: command changed)\u001b[0m');
    expect(colour.stdout).toContain('\u001b[32m      + 3\u001b[0m');
    // Every request carried a generated ID with a random part.
    expect(live.requestIds.length).toBeGreaterThan(5);
    for (const id of live.requestIds) expect(id).toMatch(/^c-[0-9a-z]+-[0-9a-f]{8}-\d+$/);
    expect(new Set(live.requestIds).size).toBe(live.requestIds.length);
  });

  test('confirmation: needed without --yes; refused without a terminal; a "no" changes nothing', async () => {
    const { live, run, cwd } = await setup();
    writeFileSync(join(cwd, 'web2.cca'), (await import('node:fs')).readFileSync(join(cwd, 'web.cca'), 'utf8').replace('replicas = 2', 'replicas = 3'));
    expect((await run('apply-no-tty', ['apply', 'web.cca'])).code).toBe(1);
    expect((await run('apply-declined', ['apply', 'web.cca'], { stdinIsTTY: true, answers: ['n'] })).code).toBe(1);
    expect(await live.store.get(buildKey('service', 'web'))).toBeNull();
    expect((await run('apply-confirmed', ['apply', 'web.cca'], { stdinIsTTY: true, answers: ['y'] })).code).toBe(0);
    expect(await live.store.get(buildKey('service', 'web'))).not.toBeNull();
    // Someone changes web while the question waits: the confirmation does not cover that.
    const changed = await run('apply-changed-meanwhile', ['apply', 'web2.cca'], {
      stdinIsTTY: true,
      answers: ['y'],
      onPrompt: async () => {
        const kv = (await live.store.get(buildKey('service', 'web')))!;
        await live.store.put(kv.key, kv.value.replace('"replicas":2', '"replicas":5'));
      },
    });
    expect(changed.stderr).toContain('warning: the services changed on the server after the diff was shown');
    const json = await run('apply-json', ['apply', 'web.cca', '--yes', '-o', 'json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ applied: true, plan: { changed: [{ name: 'web' }] } });
  });

  test("the server's spec errors point into the files; the token and reads are checked", async () => {
    const { cwd, run, live } = await setup();
    writeFileSync(join(cwd, 'api.cca'), 'service api {\n  image = "busybox:1.35"\n  after = [db]\n}\n');
    expect((await run('apply-server-error', ['apply', 'api.cca', '--yes'])).code).toBe(1);
    expect((await run('apply-server-error-verbose', ['apply', 'api.cca', '--yes', '-v'])).code).toBe(1);
    const noToken = await (await import('./harness.js')).cca(['apply', 'web.cca', '--yes', '--server', live.url], { cwd });
    expectGolden('apply-no-token', ['apply', 'web.cca', '--yes'], noToken);
    expect(noToken.code).toBe(1);
  });
});

async function seedCluster(live: Live, run: (n: string | undefined, a: string[]) => Promise<unknown>) {
  await run(undefined, ['apply', 'web.cca', '--yes']);
  const t1 = await seedNode(live.store, 'n1', 'a', 2000);
  await seedNode(live.store, 'n2', 'b', 1000, 'lost');
  await seedReplica(live.store, { service: 'web', id: 'web-a1', node: 'n1', tenure: t1, state: 'running', ready: true });
  await seedReplica(live.store, { service: 'web', id: 'web-b2' });
  await seedAllocation(live.store, 'n1', t1, ['web-a1']);
}

describe('get', () => {
  test('services, replicas and nodes as plain, wide and JSON tables; one by name; unknown names are coded', async () => {
    const { live, run } = await setup();
    await seedCluster(live, run);
    for (const kind of ['services', 'replicas', 'nodes']) {
      expect((await run(`get-${kind}-plain`, ['get', kind])).code).toBe(0);
      expect((await run(`get-${kind}-wide`, ['get', kind, '-o', 'wide'])).code).toBe(0);
      const json = await run(`get-${kind}-json`, ['get', kind, '-o', 'json']);
      expect(JSON.parse(json.stdout)).toMatchObject({ kind, items: expect.any(Array) });
    }
    expect((await run('get-service-by-name', ['get', 'service', 'web'])).code).toBe(0);
    expect((await run('get-replica-by-name', ['get', 'replica', 'web-b2', '-o', 'wide'])).code).toBe(0);
    expect((await run('get-replicas-of-service', ['get', 'replicas', '--service', 'web'])).code).toBe(0);
    expect((await run('get-unknown-service', ['get', 'service', 'nope'])).code).toBe(1);
    expect((await run('get-unknown-node', ['get', 'node', 'nope', '-o', 'json'])).code).toBe(1);
    expect((await run('get-bad-kind', ['get', 'pods'])).code).toBe(1);
  });

  test('a node held by the quorum rule shows as unreachable', async () => {
    const { live, run } = await setup();
    await seedNode(live.store, 'n3', 'c', 1000, 'unreachable');
    const r = await run(undefined, ['get', 'nodes']);
    expect(r.stdout).toMatch(/^n3\s.*\bunreachable\b/m);
  });

  test('-w follows the watch and redraws after a change, until interrupted', async () => {
    const { live, run } = await setup();
    await seedCluster(live, run);
    const stop = new AbortController();
    let changed = false;
    const r = await live.run(['get', 'replicas', '-w'], {
      signal: stop.signal,
      onWrite: (out) => {
        if (!changed && out.stdout.includes('web-b2')) {
          changed = true;
          const t = live.store.get(buildKey('node', 'n1')).then((kv) => seedReplica(live.store, { service: 'web', id: 'web-b2', node: 'n1', tenure: kv!.createRevision, state: 'starting' }));
          void t;
        }
        if ((out.stdout.match(/# revision/g) ?? []).length >= 1 && /web-b2 +web +n1 +starting/.test(out.stdout)) stop.abort();
      },
    });
    expect(r.code).toBe(0);
    expectGolden('get-watch', ['get', 'replicas', '-w'], { ...r, stdout: r.stdout.replace(/# revision \d+/g, '# revision N') });
  });
});

describe('apply --wait', () => {
  test('follows until converged, with progress and pending reasons', async () => {
    const { live, run } = await setup();
    const t1 = await seedNode(live.store, 'n1', 'a', 2000);
    // A stand-in for the controllers and the agent, driven by the progress it sees.
    let step = 0;
    const writes: Promise<void>[] = [];
    const r = await run(undefined, ['apply', 'web.cca', '--yes', '--wait', '--timeout', '10s'], {
      onWrite: (out) => {
        if (step === 0 && out.stderr.includes('waiting: web 0/2')) {
          step = 1;
          writes.push(
            (async () => {
              await seedReplica(live.store, { service: 'web', id: 'web-1', node: 'n1', tenure: t1, state: 'running', ready: true });
              await seedReplica(live.store, { service: 'web', id: 'web-2' });
            })(),
          );
        } else if (step === 1 && out.stderr.includes('1 pending')) {
          step = 2;
          writes.push(seedReplica(live.store, { service: 'web', id: 'web-2', node: 'n1', tenure: t1, state: 'running', ready: true }));
        }
      },
    });
    await Promise.all(writes);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('waiting: web 1/2 running, 1 ready (1 pending: web-2: waiting for a node that fits)');
    expect(r.stdout).toContain('converged: web 2/2 ready');
    expectGolden('apply-wait', ['apply', 'web.cca', '--yes', '--wait', '--timeout', '10s'], r);
  });

  test('times out with a coded error naming the pending reasons', async () => {
    const { live, run } = await setup();
    await run(undefined, ['apply', 'web.cca', '--yes']);
    await seedReplica(live.store, { service: 'web', id: 'web-1' });
    const r = await run('apply-wait-timeout', ['apply', 'web.cca', '--yes', '--wait', '--timeout', '300ms']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CCA-E0709');
    expect(r.stderr).toContain('web-1: waiting for a node that fits');
    // JSON: one document, printed once.
    await seedReplica(live.store, { service: 'web', id: 'web-1', node: 'n9', state: 'running', ready: true });
    await seedReplica(live.store, { service: 'web', id: 'web-2', node: 'n9', state: 'running', ready: true });
    const json = await run(undefined, ['apply', 'web.cca', '--yes', '--wait', '--timeout', '5s', '-o', 'json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ applied: false, converged: [{ name: 'web', ready: 2 }] });
  });
});

describe('delete', () => {
  test('asks first; --yes deletes; an unknown service is a coded 404', async () => {
    const { live, run } = await setup();
    await run(undefined, ['apply', 'web.cca', '--yes']);
    expect((await run('delete-no-tty', ['delete', 'service', 'web'])).code).toBe(1);
    expect((await run('delete-yes', ['delete', 'service', 'web', '--yes'])).code).toBe(0);
    expect(await live.store.get(buildKey('service', 'web'))).toBeNull();
    expect((await run('delete-unknown', ['delete', 'service', 'web', '--yes'])).code).toBe(1);
    expect((await run('delete-unknown-json', ['delete', 'service', 'web', '--yes', '-o', 'json'])).code).toBe(1);
    expect((await run('delete-bad-kind', ['delete', 'node', 'n1'])).code).toBe(1);
  });
});
