import { describe, expect, test } from 'vitest';
import {
  DEFAULTS,
  dnsLabelProblem,
  imageProblem,
  imagesMissing,
  matchesConstraint,
  untoleratedTaints,
  validateNode,
  validateService,
  validateServiceSet,
} from '../../core/model/index.js';
import { REDACTED, redactSpec } from '../../core/redact.js';
import type { ServiceSpec, ServiceSpecInput } from '../../core/model/index.js';

function ok(input: ServiceSpecInput): ServiceSpec {
  const r = validateService(input);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.value;
}
const issues = (input: unknown) => {
  const r = validateService(input);
  return r.ok ? [] : r.issues.map((i) => [i.code, i.path.join('.')]);
};

describe('service spec', () => {
  test('explicit defaults for every omitted field', () => {
    const s = ok({ name: 'web', image: 'busybox:1.35' });
    expect(s).toEqual({
      name: 'web',
      image: 'busybox:1.35',
      command: [],
      args: [],
      env: {},
      labels: {},
      replicas: DEFAULTS.replicas,
      resources: { cpuMillis: DEFAULTS.cpuMillis, memoryBytes: DEFAULTS.memoryBytes },
      ports: [],
      health: {},
      placement: { spread: ['zone', 'node'], require: [], restrict: [], prefer: [], accept: [] },
      update: { maxSurge: 1, maxUnavailable: 0, progressDeadlineMs: 600_000 },
      init: [],
      after: [],
      configs: [],
      secrets: [],
      volumes: [],
      stopGraceMs: 10_000,
      restart: 'always',
      network: { allow: [] },
    });
  });

  test('replicas default to autoscale.min when autoscaling', () => {
    expect(ok({ name: 'w', image: 'x', autoscale: { min: 3, max: 5 } }).replicas).toBe(3);
  });

  test('cross-field rules carry codes and paths', () => {
    expect(issues({ name: 'w', image: 'x', autoscale: { min: 5, max: 2 } })).toEqual([['CCA-E0303', 'autoscale.min']]);
    expect(issues({ name: 'w', image: 'x', replicas: 9, autoscale: { min: 1, max: 4 } })).toEqual([['CCA-E0304', 'replicas']]);
    expect(issues({ name: 'w', image: 'x', ports: [{ name: 'a', container: 80 }, { name: 'b', container: 80 }] })).toEqual([['CCA-E0307', 'ports.1.container']]);
    // Same number, different protocols: no clash.
    expect(issues({ name: 'w', image: 'x', ports: [{ name: 'a', container: 53 }, { name: 'b', container: 53, protocol: 'udp' }] })).toEqual([]);
    expect(issues({ name: 'w', image: 'x', volumes: [{ name: 'd', sizeBytes: 1, mountPath: '/d' }, { name: 'd', sizeBytes: 1, mountPath: '/e' }] })).toEqual([['CCA-E0308', 'volumes.1.name']]);
    expect(issues({ name: 'w', image: 'x', secrets: [{ name: 's', value: 'v' }] })).toEqual([['CCA-E0315', 'secrets.0']]);
    expect(issues({ name: 'w', image: 'x', health: { liveness: { probe: { type: 'tcp' } } } })).toEqual([['CCA-E0310', 'health.liveness.probe']]);
    expect(
      issues({ name: 'w', image: 'x', ports: [{ name: 'p', container: 1 }], health: { liveness: { probe: { type: 'tcp' }, intervalMs: 1000, timeoutMs: 1000 } } }),
    ).toEqual([['CCA-E0314', 'health.liveness.timeoutMs']]);
  });

  test('shape errors are coded and never echo values (secrets stay secret)', () => {
    const r = validateService({ name: 'w', image: 'x', secrets: [{ name: 's', value: 42, path: '/s' }], bogus: 1 });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.issues.map((i) => i.code)).toEqual(['CCA-E0302', 'CCA-E0302']);
    expect(JSON.stringify(r.issues)).not.toContain('42');
    expect(JSON.stringify(r.issues)).toContain('bogus');
  });

  test('names and image references', () => {
    expect(dnsLabelProblem('web-1')).toBeUndefined();
    expect(dnsLabelProblem('Web')).toBeDefined();
    expect(dnsLabelProblem('web-')).toBeDefined();
    expect(dnsLabelProblem('a'.repeat(64))).toBeDefined();
    expect(dnsLabelProblem('a/b')).toBeDefined();
    for (const good of ['busybox', 'busybox:1.35', 'ghcr.io/a/b:1', 'localhost:5000/x', `x@sha256:${'a'.repeat(64)}`]) expect(imageProblem(good)).toBeUndefined();
    for (const bad of ['', 'Busybox', 'a b', 'x:', '--help.x/y', '-r.example:5000/x', 'reg.example-/x', `x@sha256:${'a'.repeat(3)}`]) expect(imageProblem(bad)).toBeDefined();
  });

  test('redactSpec replaces every secret value', () => {
    const s = ok({ name: 'w', image: 'x', secrets: [{ name: 'a', value: 'p1', path: '/a' }, { name: 'b', value: 'p2', env: 'B' }] });
    const r = redactSpec(s);
    expect(r.secrets.map((x) => x.value)).toEqual([REDACTED, REDACTED]);
    expect(JSON.stringify(r)).not.toMatch(/p1|p2/);
    expect(s.secrets[0]!.value).toBe('p1');
  });
});

describe('service sets', () => {
  const spec = (name: string, after: string[] = []) => ok({ name, image: 'x', after });

  test('unknown after targets suggest the nearest name; existing services count', () => {
    const out = validateServiceSet([spec('web', ['apii']), spec('api')]);
    expect(out.map((i) => [i.code, i.params.hint])).toEqual([['CCA-E0305', 'did you mean `api`?']]);
    expect(validateServiceSet([spec('web', ['db'])], { existing: ['db'] })).toEqual([]);
  });

  test('cycles are named, once each, from their smallest member', () => {
    const out = validateServiceSet([spec('c', ['a']), spec('a', ['b']), spec('b', ['c']), spec('d', ['d']), spec('e', ['a'])]);
    expect(out.map((i) => i.params.cycle)).toEqual(['a → b → c → a', 'd → d']);
  });

  test('a cycle through stored services is found and reported against the submitted member', () => {
    const stored = new Map([['c', ['a']], ['b', ['c']]]);
    const out = validateServiceSet([spec('a', ['b'])], { existing: ['b', 'c'], storedAfter: stored });
    expect(out.map((i) => [i.code, i.service, i.params.cycle])).toEqual([['CCA-E0306', 'a', 'a → b → c → a']]);
    // A submitted spec replaces its stored edges: breaking the cycle in the same apply is fine.
    expect(validateServiceSet([spec('a', ['b']), spec('c')], { existing: ['b', 'c'], storedAfter: stored })).toEqual([]);
    // Stored services alone never report (they were valid when applied).
    expect(validateServiceSet([spec('z')], { existing: ['x', 'y'], storedAfter: new Map([['x', ['y']], ['y', ['x']]]) })).toEqual([]);
  });

  test('a long chain is not a cycle and does not recurse', () => {
    const chain = Array.from({ length: 2000 }, (_, i) => spec(`s${i}`, i > 0 ? [`s${i - 1}`] : []));
    expect(validateServiceSet(chain)).toEqual([]);
  });

  test('duplicate names', () => {
    expect(validateServiceSet([spec('a'), spec('a')]).map((i) => i.code)).toEqual(['CCA-E0309']);
  });
});

describe('constraints and taints', () => {
  const node = { name: 'n1', zone: 'a', labels: { disk: 'ssd' }, taints: ['gpu', 'dedicated=db'] };
  test('match', () => {
    expect(matchesConstraint({ attribute: 'zone', op: 'in', values: ['a', 'b'] }, node)).toBe(true);
    expect(matchesConstraint({ attribute: 'label.disk', op: '==', values: ['ssd'] }, node)).toBe(true);
    expect(matchesConstraint({ attribute: 'node', op: '!=', values: ['n1'] }, node)).toBe(false);
    expect(matchesConstraint({ attribute: 'label.gpu', op: '==', values: ['x'] }, node)).toBe(false);
    expect(matchesConstraint({ attribute: 'label.gpu', op: 'not in', values: ['x'] }, node)).toBe(true);
  });
  test('accept tolerates by key or by exact key=value', () => {
    expect(untoleratedTaints(['gpu', 'dedicated=db'], node.taints)).toEqual([]);
    expect(untoleratedTaints(['dedicated'], node.taints)).toEqual(['gpu']);
    expect(untoleratedTaints(['dedicated=web'], node.taints)).toEqual(['gpu', 'dedicated=db']);
  });
});

describe('node records', () => {
  test('defaults, and coded problems', () => {
    const r = validateNode({ name: 'node-1', capacity: { cpuMillis: 4000, memoryBytes: 2 ** 33 } });
    expect(r.ok && r.value).toMatchObject({ zone: 'default', labels: {}, taints: [], images: {} });
    const bad = validateNode({ name: 'Node/1', capacity: { cpuMillis: 0 } });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(new Set(bad.diagnostics.map((d) => d.code))).toEqual(new Set(['CCA-E0317']));
  });
  test('images missing from every catalogue', () => {
    const nodes = [{ images: { 'busybox:1.35': 'sha256:1' } }];
    expect(imagesMissing([{ name: 'a', image: 'busybox:1.35' }, { name: 'b', image: 'nginx' }], nodes).map((d) => d.message)).toEqual([
      'service b uses image `nginx`, which no node has in its image catalogue',
    ]);
  });
});

describe('canonical JSON', () => {
  test('equal specs serialise to equal text, whatever the input key order', () => {
    const a = ok({ name: 'w', image: 'x', env: { B: '2', A: '1' }, labels: { z: '1', a: '2' }, replicas: 2, init: [{ name: 'i', command: ['x'], env: { Y: '', X: '' } }] });
    const b = ok({ replicas: 2, labels: { a: '2', z: '1' }, init: [{ env: { X: '', Y: '' }, command: ['x'], name: 'i' }], env: { A: '1', B: '2' }, image: 'x', name: 'w' });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(Object.keys(a.env)).toEqual(['A', 'B']);
  });
});

describe('shared readers', async () => {
  const { portNumber, resolveCountOrPercent, desiredReplicas, isStateful } = await import('../../core/model/index.js');
  test('ports, surge, desired count, statefulness', () => {
    const s = ok({ name: 'w', image: 'x', replicas: 4, ports: [{ name: 'http', container: 8080 }], autoscale: { min: 2, max: 6 } });
    expect(portNumber(s, 'http')).toBe(8080);
    expect(portNumber(s, 9090)).toBe(9090);
    expect(portNumber(s, 'nope')).toBeUndefined();
    expect(resolveCountOrPercent('25%', 10, 'up')).toBe(3);
    expect(resolveCountOrPercent('25%', 10, 'down')).toBe(2);
    expect(resolveCountOrPercent(1, 10, 'down')).toBe(1);
    expect(desiredReplicas(s)).toBe(4);
    expect(desiredReplicas(s, 10)).toBe(6);
    expect(desiredReplicas(s, 1)).toBe(2);
    expect(isStateful(s)).toBe(false);
  });
});

describe('rollouts', async () => {
  const { rolloutChanges } = await import('../../core/model/index.js');
  test('image and env roll; replicas and placement do not', () => {
    const a = ok({ name: 'w', image: 'x:1', env: { A: '1', B: '2' } });
    expect(rolloutChanges(a, ok({ name: 'w', image: 'x:2', env: { B: '2', A: '1' } }))).toEqual(['image']);
    expect(rolloutChanges(a, ok({ name: 'w', image: 'x:1', env: { A: '1', B: '3' } }))).toEqual(['env']);
    expect(rolloutChanges(a, ok({ name: 'w', image: 'x:1', env: { A: '1', B: '2' }, replicas: 9, placement: { spread: ['node'] } }))).toEqual([]);
  });
});

describe('template hash', async () => {
  const { templateHash, canonicalJson, ROLLOUT_FIELDS } = await import('../../core/model/index.js');
  const base = ok({ name: 'w', image: 'x:1', env: { A: '1', B: '2' }, replicas: 3 });

  test('stable: 16 hex digits, the same for equal templates whatever the key order', () => {
    expect(templateHash(base)).toMatch(/^[0-9a-f]{16}$/);
    expect(templateHash(ok({ name: 'w', image: 'x:1', env: { B: '2', A: '1' }, replicas: 3 }))).toBe(templateHash(base));
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] })).toBe('{"a":[{"d":2}],"b":1}');
    // Pinned: a change to the hash function rolls every service on upgrade, so it is deliberate.
    expect(templateHash(ok({ name: 'w', image: 'busybox:1.35' }))).toBe(templateHash(ok({ name: 'other', image: 'busybox:1.35', replicas: 7 })));
  });

  test("a frozen spec's hash is computed once and kept with it; an open one's every time", () => {
    let reads = 0;
    const counted = (spec: typeof base) => {
      const o = { ...spec };
      Object.defineProperty(o, 'image', { get: () => (reads++, spec.image), enumerable: true });
      return o;
    };
    const frozen = Object.freeze(counted(base));
    expect(templateHash(frozen)).toBe(templateHash(base));
    const once = reads;
    expect(templateHash(frozen)).toBe(templateHash(base));
    expect(reads).toBe(once);
    const open = counted(base);
    templateHash(open);
    templateHash(open);
    expect(reads).toBe(once + 2);
  });

  test('every rollout field changes it; replicas, update, autoscale, placement, labels, after and network do not', () => {
    const changed: Record<(typeof ROLLOUT_FIELDS)[number], Parameters<typeof ok>[0]> = {
      image: { name: 'w', image: 'x:2', env: { A: '1', B: '2' } },
      command: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, command: ['run'] },
      args: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, args: ['-v'] },
      env: { name: 'w', image: 'x:1', env: { A: '1', B: '3' } },
      workdir: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, workdir: '/srv' },
      resources: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, resources: { cpuMillis: 200 } },
      ports: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, ports: [{ name: 'http', container: 80 }] },
      health: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, health: { readiness: { probe: { type: 'exec', command: ['true'] } } } },
      init: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, init: [{ name: 'm', command: ['migrate'] }] },
      configs: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, configs: [{ name: 'c', path: '/c', content: 'x' }] },
      secrets: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, secrets: [{ name: 's', value: 'v', env: 'S' }] },
      volumes: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, volumes: [{ name: 'd', sizeBytes: 1, mountPath: '/d' }] },
      stopGraceMs: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, stopGraceMs: 1 },
      restart: { name: 'w', image: 'x:1', env: { A: '1', B: '2' }, restart: 'never' },
    };
    for (const f of ROLLOUT_FIELDS) expect(templateHash(ok(changed[f])), f).not.toBe(templateHash(base));
    const same = ok({
      name: 'w', image: 'x:1', env: { A: '1', B: '2' }, replicas: 9, labels: { team: 'a' }, after: ['db'],
      update: { maxSurge: '50%', maxUnavailable: 1, progressDeadlineMs: 1000 }, placement: { spread: ['node'] }, network: { allow: [{ service: 'api' }] },
    });
    expect(templateHash(same)).toBe(templateHash(base));
  });

  test('max_surge and max_unavailable both zero is CCA-E0318; either alone is fine', () => {
    expect(issues({ name: 'w', image: 'x', update: { maxSurge: 0, maxUnavailable: '0%' } })).toEqual([['CCA-E0318', 'update.maxSurge']]);
    expect(issues({ name: 'w', image: 'x', update: { maxSurge: 0, maxUnavailable: 1 } })).toEqual([]);
    expect(issues({ name: 'w', image: 'x', update: { maxSurge: '0%', maxUnavailable: '25%' } })).toEqual([]);
  });
});
