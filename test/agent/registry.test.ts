import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classify, isInsecure, progressBytes } from '../../agent/containerd/pull.js';
import { qualifiedImage } from '../../core/model/names.js';
import { startContainerdAgent, stopContainerdAgent, type ContainerdAgent } from './containerd-harness.js';
import { tempDir } from './support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';
import { startRegistry, type TestRegistry } from '../support/registry.js';

describe('image references and pull errors (no registry)', () => {
  it('qualifies Docker Hub short names and keeps registry hosts, tags and digests', () => {
    expect(qualifiedImage('nginx:1.27')).toEqual({ ref: 'docker.io/library/nginx:1.27', registry: 'docker.io' });
    expect(qualifiedImage('me/app')).toEqual({ ref: 'docker.io/me/app:latest', registry: 'docker.io' });
    expect(qualifiedImage('127.0.0.1:5000/cca/busybox:1.35').ref).toBe('127.0.0.1:5000/cca/busybox:1.35');
    expect(qualifiedImage('localhost/x').ref).toBe('localhost/x:latest');
    const pinned = `ghcr.io/o/app@sha256:${'a'.repeat(64)}`;
    expect(qualifiedImage(pinned)).toEqual({ ref: pinned, registry: 'ghcr.io' });
  });

  it('names the cause of a failed pull from what ctr says', () => {
    const base = { node: 'n1', image: 'x', replica: 'x-1', registry: 'r:1', ref: 'r:1/x:latest' };
    expect(classify('failed to resolve reference "r:1/x:latest": r:1/x:latest: not found', base, undefined).code).toBe('CCA-E0550');
    expect(classify('pulling from host r:1 failed with status code [manifests 1]: 401 Unauthorized', base, 'alice').code).toBe('CCA-E0551');
    expect(classify('dial tcp 127.0.0.1:1: connect: connection refused', base, undefined).code).toBe('CCA-E0552');
    expect(classify('failed to extract layer: write /var/lib/x: no space left on device', base, undefined).code).toBe('CCA-E0553');
    expect(classify('something else', base, undefined).code).toBe('CCA-E0554');
    expect(isInsecure('127.0.0.1:5000', ['127.0.0.1:5000'])).toBe(true);
    expect(isInsecure('127.0.0.1:5000', ['127.0.0.1'])).toBe(true);
    expect(isInsecure('127.0.0.1:5000', ['127.0.0.1:5001'])).toBe(false);
  });

  it('reads the bytes fetched from ctr\'s progress table', () => {
    expect(progressBytes('elapsed: 0.1 s  total:   0.0 B (0.0 B/s)\nelapsed: 0.2 s  total:  1.5 MiB (7.5 MiB/s)')).toBe(1.5 * 2 ** 20);
    expect(progressBytes('resolving |----|')).toBeUndefined();
  });
});

const available = needs('containerd') && needs('registry');

describe.runIf(available)('images pulled from a registry (containerd runtime, registries on loopback)', () => {
  const tmp = tempDir('reg');
  const namespace = `cca-reg-${process.pid}`;
  let h: ContainerdAgent;
  let open: TestRegistry;
  let locked: TestRegistry;
  let digest: string;
  const auth = { user: 'deploy', password: 'pull-s3cret' };

  beforeAll(async () => {
    open = await startRegistry(join(tmp.dir, 'open'));
    locked = await startRegistry(join(tmp.dir, 'locked'), auth);
    h = await startContainerdAgent(tmp.dir, namespace, undefined, { insecureRegistries: [open.host, locked.host], pullBackoffMs: { first: 300, max: 1_000 } });
    const archive = join(tmp.dir, 'images', 'busybox-1.35.oci.tar');
    digest = open.push(archive, 'cca/busybox:1.35');
    expect(locked.push(archive, 'cca/private:1')).toBe(digest);
  }, 120_000);

  afterAll(async () => {
    await stopContainerdAgent(h ?? {});
    await open?.stop();
    await locked?.stop();
    tmp.cleanup();
  }, 60_000);

  const sleeper = (name: string, image: string, extra: Record<string, unknown> = {}) => ({ name, image, command: ['sleep', '3600'], stopGraceMs: 1_000, ...extra });

  it('declares that the node pulls, and runs an image named by tag from the registry, reporting its manifest digest', async () => {
    expect(h.server.nodes.get('n1')!.record.pulls).toBe(true);
    h.server.assign('n1', 'bytag-1', sleeper('bytag', `${open.host}/cca/busybox:1.35`));
    const obs = await waitFor('running', () => (h.server.observation('n1', 'bytag-1')?.state === 'running' ? h.server.observation('n1', 'bytag-1') : undefined), 60_000);
    expect(obs.image).toBe(digest);
    expect(obs.diagnostic).toBeUndefined();
    expect((await h.runtime.ctr.images()).has(`${open.host}/cca/busybox:1.35`)).toBe(true);
    h.server.unassign('n1', 'bytag-1');
  }, 90_000);

  it('runs an image pinned by digest and reports that digest', async () => {
    h.server.assign('n1', 'bydigest-1', sleeper('bydigest', `${open.host}/cca/busybox@${digest}`, { pull: { policy: 'always' } }));
    const obs = await waitFor('running', () => (h.server.observation('n1', 'bydigest-1')?.state === 'running' ? h.server.observation('n1', 'bydigest-1') : undefined), 60_000);
    expect(obs.image).toBe(digest);
    h.server.unassign('n1', 'bydigest-1');
  }, 90_000);

  it('reports a missing image as pulling with the not-found code, retrying', async () => {
    h.server.assign('n1', 'missing-1', sleeper('missing', `${open.host}/cca/nothing:9`));
    const obs = await waitFor('not found', () => {
      const o = h.server.observation('n1', 'missing-1');
      return o?.diagnostic?.code === 'CCA-E0550' && (o.pull?.attempt ?? 0) >= 2 ? o : undefined;
    }, 30_000);
    expect(obs.state).toBe('pulling');
    expect(obs.diagnostic!.message).toContain('cca/nothing:9');
    h.server.unassign('n1', 'missing-1');
    await waitFor('forgotten', () => !h.agent.agent.status().slots.some((s) => s.replica === 'missing-1'), 15_000);
  }, 60_000);

  it('pulls from a registry that needs a password with the service\'s pull secret, and names a wrong password unauthorized', async () => {
    const image = `${locked.host}/cca/private:1`;
    const secret = (value: string) => ({ pull: { secret: 'regcred' }, secrets: [{ name: 'regcred', value }] });
    // The failures first: once the image is on the node, `if-missing` finds it there (docs/agent.md).
    h.server.assign('n1', 'wrongpw-1', sleeper('wrongpw', image, secret(`${auth.user}:nope`)));
    h.server.assign('n1', 'anon-1', sleeper('anon', image));
    for (const r of ['wrongpw-1', 'anon-1']) {
      const obs = await waitFor(`${r} unauthorized`, () => (h.server.observation('n1', r)?.diagnostic?.code === 'CCA-E0551' ? h.server.observation('n1', r) : undefined), 30_000);
      expect(obs.state).toBe('pulling');
      // The password is in no message the agent reports.
      expect(obs.diagnostic!.message).not.toContain(auth.password);
      expect(obs.diagnostic!.message).not.toContain('nope');
    }
    expect(h.server.observation('n1', 'wrongpw-1')!.diagnostic!.message).toContain(`user ${auth.user}`);
    // With good credentials a missing tag is not-found, not unauthorized (why the password goes
    // on ctr's command line and not in a hosts.toml header: docs/agent.md).
    h.server.assign('n1', 'absent-1', sleeper('absent', `${locked.host}/cca/private:404`, secret(`${auth.user}:${auth.password}`)));
    await waitFor('absent not found', () => h.server.observation('n1', 'absent-1')?.diagnostic?.code === 'CCA-E0550', 30_000);
    h.server.unassign('n1', 'absent-1');
    expect(h.server.observation('n1', 'anon-1')!.diagnostic!.message).toContain('no pull secret');
    h.server.assign('n1', 'private-1', sleeper('private', image, secret(`${auth.user}:${auth.password}`)));
    const running = await waitFor('running', () => (h.server.observation('n1', 'private-1')?.state === 'running' ? h.server.observation('n1', 'private-1') : undefined), 60_000);
    expect(running.image).toBe(digest);
    for (const r of ['wrongpw-1', 'anon-1', 'private-1']) h.server.unassign('n1', r);
  }, 120_000);

  it('names an unreachable registry', async () => {
    h.server.assign('n1', 'down-1', sleeper('down', '127.0.0.1:1/cca/busybox:1.35'));
    const obs = await waitFor('unreachable', () => (h.server.observation('n1', 'down-1')?.diagnostic?.code === 'CCA-E0552' ? h.server.observation('n1', 'down-1') : undefined), 30_000);
    expect(obs.state).toBe('pulling');
    h.server.unassign('n1', 'down-1');
  }, 60_000);
});
