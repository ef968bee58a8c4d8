/**
 * Issue 16 §2, the agent's half: handed a hostile assignment directly (as an older server or
 * a direct store write could, bypassing the model), the agent refuses it with CCA-E0531 on
 * the replica and writes nothing outside the replica's directory. A sentinel directory
 * beside the agent's state directory is where every escape aims; it must stay as it was.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Refusal } from '../../agent/confine.js';
import { FENCE } from '../../agent/core/fence.js';
import { materialize } from '../../agent/materialize.js';
import { bindMount } from '../../agent/runtime-containerd.js';
import { ProcessRuntime } from '../../agent/runtime-process.js';
import type { StartRequest } from '../../agent/runtime.js';
import { StateDir } from '../../agent/state.js';
import { serviceSpecSchema, type ServiceSpec, type ServiceSpecInput } from '../../core/model/index.js';
import { startContainerdAgent, stopContainerdAgent, type ContainerdAgent } from '../agent/containerd-harness.js';
import { FakeAgentServer } from '../agent/fake-server.js';
import { killLeftoverWorkloads, startAgent, tempDir, type TestAgent } from '../agent/support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';

/** Every entry under `dir`: type, and a file's content or a link's target. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = lstatSync(p);
      const key = relative(dir, p);
      if (st.isSymbolicLink()) out[key] = `link ${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[key] = `dir ${(st.mode & 0o7777).toString(8)}`;
        walk(p);
      } else out[key] = `file ${(st.mode & 0o7777).toString(8)} ${readFileSync(p, 'utf8')}`;
    }
  };
  walk(dir);
  return out;
}

/** `<tmp>/sentinel` with a file and a directory, beside `<tmp>/state`. */
function plantSentinel(tmp: string): { dir: string; before: Record<string, string> } {
  const dir = join(tmp, 'sentinel');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'target'), 'untouched\n', { mode: 0o644 });
  return { dir, before: snapshot(dir) };
}

/** From `<tmp>/state/replicas/<id>/files` four `..` reach `<tmp>`. */
const CLIMB = '/../../../..';

const web: ServiceSpecInput = { name: 'web', image: 'busybox:1.35', command: ['sleep', '30'], stopGraceMs: 500 };

describe('the agent refuses hostile assignments on the process runtime (CCA-E0531) and writes nothing outside', () => {
  let tmp: { dir: string; cleanup: () => void };
  let server: FakeAgentServer;
  let state: StateDir;
  let runtime: ProcessRuntime;
  let agent: TestAgent | undefined;
  let sentinel: { dir: string; before: Record<string, string> };

  beforeEach(async () => {
    tmp = tempDir('escapes');
    sentinel = plantSentinel(tmp.dir);
    state = new StateDir(join(tmp.dir, 'state'));
    runtime = new ProcessRuntime({ root: state.replicas, fenceFile: state.fenceFile, fenceKillMs: FENCE.killMs, pollMs: 100 });
    server = new FakeAgentServer();
    await server.listen();
  });

  afterEach(async () => {
    await agent?.agent.close();
    agent = undefined;
    await runtime.close();
    await server.close();
    killLeftoverWorkloads(state.replicas);
    tmp.cleanup();
  });

  const run = async () => {
    agent = await startAgent(server, runtime, state.dir);
    await waitFor('registration', () => server.tenureOf('n1'));
    return agent;
  };

  /** The replica ends failed with CCA-E0531, no workload was started, the sentinel is as it was. */
  const expectRefused = async (replica: string, reason: RegExp) => {
    const obs = await waitFor('refused', () => server.observation('n1', replica), 10_000);
    expect(obs.state).toBe('failed');
    expect(obs.diagnostic?.code).toBe('CCA-E0531');
    expect(obs.diagnostic?.message).toMatch(reason);
    expect(obs.diagnostic?.message).not.toMatch(/\n\s+at /);
    expect(existsSync(join(state.replicas, replica, 'handle.json'))).toBe(false);
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
    await waitFor('the refusal event', () => server.events.some((e) => e.kind === 'refused' && e.replica === replica));
  };

  it('a config path climbing out with .. is refused', async () => {
    await run();
    server.assignUnchecked('n1', 'web-1', web, { configs: [{ name: 'keys', path: `${CLIMB}/sentinel/target`, content: 'owned\n', mode: 0o644 }] });
    await expectRefused('web-1', /`\.\.` component/);
  });

  it('a secret path climbing out with .. is refused', async () => {
    await run();
    server.assignUnchecked('n1', 'web-1', web, { secrets: [{ name: 'pw', value: 'owned', path: `${CLIMB}/sentinel/sub/pw`, mode: 0o400 }] });
    await expectRefused('web-1', /`\.\.` component/);
  });

  it('unclean spellings (//, a trailing slash, NUL, a relative path, /proc) are refused', async () => {
    await run();
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['web-2', { configs: [{ name: 'a', path: '/etc//a.conf', content: 'x', mode: 0o644 }] }, /empty component/],
      ['web-3', { configs: [{ name: 'a', path: '/etc/a.conf/', content: 'x', mode: 0o644 }] }, /ends with \//],
      ['web-4', { secrets: [{ name: 'a', value: 'x', path: '/run/a\0b', mode: 0o400 }] }, /control character/],
      ['web-5', { secrets: [{ name: 'a', value: 'x', path: 'run/a', mode: 0o400 }] }, /must start with \//],
      ['web-6', { volumes: [{ name: 'data', sizeBytes: 2 ** 20, mountPath: '/proc', readOnly: false }] }, /would cover \/proc/],
      ['web-7', { workdir: '/app/../..' }, /`\.\.` component/],
    ];
    for (const [replica, hostile] of cases) server.assignUnchecked('n1', replica, web, hostile);
    for (const [replica, , reason] of cases) await expectRefused(replica, reason);
  });

  it('a volume mount injecting src=/ is refused, and no volume is made', async () => {
    await run();
    server.assignUnchecked('n1', 'web-1', web, { volumes: [{ name: 'data', sizeBytes: 2 ** 20, mountPath: '/data,src=/', readOnly: false }] });
    await expectRefused('web-1', /contains ","/);
    expect(existsSync(join(state.dir, 'volumes', 'web'))).toBe(false);
  });

  it('a volume name that is a path is refused before any directory is made for it', async () => {
    await run();
    server.assignUnchecked('n1', 'web-1', web, { volumes: [{ name: '../../../sentinel/sub/vol', sizeBytes: 2 ** 20, mountPath: '/data', readOnly: false }] });
    await expectRefused('web-1', /volume name/);
    expect(existsSync(join(state.dir, 'volumes'))).toBe(false);
  });

  it('a replica id that is a path is refused before its directory is made', async () => {
    await run();
    server.assignUnchecked('n1', '../../sentinel/sub/r', web, {});
    const obs = await waitFor('refused', () => server.observation('n1', '../../sentinel/sub/r'), 10_000);
    expect(obs.diagnostic?.code).toBe('CCA-E0531');
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
  });

  it('a setuid/setgid/sticky mode is masked to permission bits; the replica runs', async () => {
    await run();
    server.assignUnchecked('n1', 'web-1', web, {
      configs: [{ name: 'tool', path: '/usr/local/bin/tool', content: '#!/bin/sh\n', mode: 0o4755 }],
      secrets: [{ name: 'pw', value: 's3cret', path: '/run/secrets/pw', mode: 0o7600 }],
    });
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running', 15_000);
    const files = join(state.replicas, 'web-1', 'files');
    expect(statSync(join(files, 'usr/local/bin/tool')).mode & 0o7777).toBe(0o755);
    expect(statSync(join(files, 'run/secrets/pw')).mode & 0o7777).toBe(0o600);
  });

  it('a symbolic link planted on the way (a directory of files/) is not written through', async () => {
    // What a process-runtime workload could leave in its own files/ before a restart in place.
    mkdirSync(join(state.replicas, 'web-1', 'files'), { recursive: true });
    symlinkSync(sentinel.dir, join(state.replicas, 'web-1', 'files', 'etc'));
    await run();
    server.assignUnchecked('n1', 'web-1', web, { configs: [{ name: 'app', path: '/etc/target', content: 'owned\n', mode: 0o644 }] });
    await expectRefused('web-1', /symbolic link/);
  });

  it('a replica directory replaced by a symbolic link is not written through', async () => {
    mkdirSync(state.replicas, { recursive: true });
    symlinkSync(join(sentinel.dir, 'sub'), join(state.replicas, 'web-1'));
    await run();
    server.assign('n1', 'web-1', { ...web, configs: [{ name: 'app', path: '/etc/app.conf', content: 'owned\n' }] });
    await expectRefused('web-1', /symbolic link/);
  });

  it('a symbolic link planted at the file itself is not written through', async () => {
    mkdirSync(join(state.replicas, 'web-1', 'files', 'etc'), { recursive: true });
    symlinkSync(join(sentinel.dir, 'target'), join(state.replicas, 'web-1', 'files', 'etc', 'app.conf'));
    await run();
    // A clean path: only the link makes it an escape.
    server.assign('n1', 'web-1', { ...web, configs: [{ name: 'app', path: '/etc/app.conf', content: 'owned\n' }] });
    await expectRefused('web-1', /symbolic link/);
  });
});

describe('each layer holds on its own, below the agent\'s checks', () => {
  let tmp: { dir: string; cleanup: () => void };
  let sentinel: { dir: string; before: Record<string, string> };
  let runtime: ProcessRuntime;
  let replicas: string;

  beforeEach(() => {
    tmp = tempDir('escapes-layer');
    sentinel = plantSentinel(tmp.dir);
    replicas = join(tmp.dir, 'state', 'replicas');
    runtime = new ProcessRuntime({ root: replicas, fenceFile: '', fenceKillMs: FENCE.killMs, pollMs: 100 });
  });

  afterEach(async () => {
    await runtime.close();
    killLeftoverWorkloads(replicas);
    tmp.cleanup();
  });

  const spec = (hostile: Partial<ServiceSpec>): ServiceSpec => ({ ...(serviceSpecSchema.parse(web) as ServiceSpec), ...hostile });
  const request = (s: ServiceSpec, over: Partial<StartRequest> = {}): StartRequest => {
    const dir = join(replicas, 'web-1');
    mkdirSync(dir, { recursive: true });
    return { replica: 'web-1', service: 'web', spec: s, image: '', env: {}, files: [], dir, ...over };
  };

  it('materialize refuses a path resolving outside files/ even when nothing checked it first', () => {
    const dir = join(replicas, 'web-1');
    expect(() => materialize(dir, { configs: [{ name: 'k', path: `${CLIMB}/sentinel/target`, content: 'owned', mode: 0o644 }], secrets: [] })).toThrow(Refusal);
    expect(() => materialize(dir, { configs: [], secrets: [{ name: 'p', value: 'owned', path: `${CLIMB}/sentinel/pw`, mode: 0o400 }] })).toThrow(Refusal);
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
  });

  it('the process runtime refuses a volume link outside files/', async () => {
    const volume = { name: 'data', hostPath: join(tmp.dir, 'vol'), path: `${CLIMB}/sentinel/sub/link`, readOnly: false };
    await expect(runtime.start(request(spec({}), { volumes: [volume] }))).rejects.toThrow(Refusal);
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
  });

  it('the process runtime refuses a workdir outside files/ and makes no directory there', async () => {
    await expect(runtime.start(request(spec({ workdir: `${CLIMB}/sentinel/sub/wd` })))).rejects.toThrow(Refusal);
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
  });

  it('the process runtime never uses a host directory as the workdir, even one that exists', async () => {
    await runtime.start(request(spec({ workdir: sentinel.dir })));
    const cfg = JSON.parse(readFileSync(join(replicas, 'web-1', 'supervisor.json'), 'utf8')) as { cwd: string };
    expect(cfg.cwd).toBe(join(replicas, 'web-1', 'files', sentinel.dir));
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
  });

  it('containerd mount arguments refuse every character that would add a field', () => {
    expect(bindMount('/var/lib/x', '/data', 'rw')).toEqual(['--mount', 'type=bind,src=/var/lib/x,dst=/data,options=rbind:rw']);
    for (const bad of ['/data,src=/', '/data"', '/data=x', '/data\nsrc=/', '/data\r']) {
      expect(() => bindMount('/var/lib/x', bad, 'rw'), bad).toThrow(Refusal);
      expect(() => bindMount(bad, '/data', 'ro'), bad).toThrow(Refusal);
    }
  });
});

describe.runIf(needs('containerd'))('the agent refuses hostile assignments on containerd (private containerd)', () => {
  let tmp: { dir: string; cleanup: () => void };
  let h: ContainerdAgent;
  let sentinel: { dir: string; before: Record<string, string> };

  beforeAll(async () => {
    tmp = tempDir('escapes-ctd');
    sentinel = plantSentinel(tmp.dir);
    h = await startContainerdAgent(tmp.dir, `cca-escapes-${process.pid}`);
  }, 120_000);

  afterAll(async () => {
    await stopContainerdAgent(h);
    tmp.cleanup();
  }, 60_000);

  it('a volume mount injecting src=/ is refused before any container exists (no host / mount)', async () => {
    h.server.assignUnchecked('n1', 'evil-1', { ...web, name: 'evil' }, { volumes: [{ name: 'data', sizeBytes: 2 ** 20, mountPath: '/data,src=/', readOnly: false }] });
    const obs = await waitFor('refused', () => h.server.observation('n1', 'evil-1'), 30_000);
    expect(obs.state).toBe('failed');
    expect(obs.diagnostic?.code).toBe('CCA-E0531');
    expect([...(await h.runtime.ctr.containers())].filter((c) => c.startsWith('cca-evil-1'))).toEqual([]);
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
  }, 60_000);

  it('the runtime itself refuses a mount that could inject fields, with no agent check in front', async () => {
    const dir = join(tmp.dir, 'state', 'replicas', 'evil-2');
    mkdirSync(join(dir, 'files'), { recursive: true });
    writeFileSync(join(dir, 'files', 'x'), 'x');
    const s = { ...(serviceSpecSchema.parse({ ...web, name: 'evil' }) as ServiceSpec) };
    const req: StartRequest = { replica: 'evil-2', service: 'evil', spec: s, image: '', env: {}, files: [{ hostPath: join(dir, 'files', 'x'), path: '/etc/x,src=/' }], dir };
    await expect(h.runtime.start(req)).rejects.toThrow(Refusal);
    const volume = { name: 'data', hostPath: join(tmp.dir, 'vol'), path: '/data,src=/,options=rbind:rw', readOnly: false };
    await expect(h.runtime.start({ ...req, files: [], volumes: [volume] })).rejects.toThrow(Refusal);
    expect([...(await h.runtime.ctr.containers())].filter((c) => c.startsWith('cca-evil-2'))).toEqual([]);
    expect(snapshot(sentinel.dir)).toEqual(sentinel.before);
  }, 60_000);
});
