import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildKey, redactDeep } from '../../core/keys.js';
import { REDACTED, redactSpec, redactText, redactUrl } from '../../core/redact.js';
import { validateService, type ServiceSpec } from '../../core/model/index.js';

/**
 * The evidence redactor (`cca bundle`) against planted values: whatever the structure a
 * spec hides in (an object, a stored fact, JSON inside a string inside JSON, an array of
 * decisions), no secret value, env value, config content, URL password or token survives.
 */
const SEED = process.env.CCA_SEED === undefined ? undefined : Number(process.env.CCA_SEED);
const opts = (numRuns: number) => ({ numRuns, ...(SEED === undefined ? {} : { seed: SEED }) });

/** Distinctive values (so a leak is not a coincidence), 10–30 characters. */
const planted = fc.string({ unit: fc.constantFrom(...'QXZJKqxzjk0123456789#%&!?'.split('')), minLength: 10, maxLength: 30 });
const envName = fc.constantFrom('DATABASE_URL', 'DB_PASS', 'STRIPE_KEY', 'GREETING', 'MODE', 'X');

const specWith = fc.record({ secret: planted, env: planted, config: planted, initEnv: planted, name: envName }).map(({ secret, env, config, initEnv, name }) => {
  const v = validateService({
    name: 'api',
    image: 'busybox:1.35',
    env: { [name]: env },
    secrets: [{ name: 'db', value: secret, env: 'DB_PASSWORD' }],
    configs: [{ name: 'app', path: '/etc/app.conf', content: config }],
    init: [{ name: 'migrate', command: ['sh', '-c', 'true'], env: { TOKEN: initEnv } }],
  });
  if (!v.ok) throw new Error(JSON.stringify(v.issues));
  return { spec: v.value, values: [secret, env, config, initEnv] };
});

type Wrap = (spec: ServiceSpec) => unknown;
const wraps: Wrap[] = [
  (s) => s,
  (s) => ({ key: buildKey('service', s.name), modRevision: 3, value: JSON.stringify(s) }),
  (s) => ({ decision: { evidence: [{ key: buildKey('service', s.name), value: JSON.stringify(s) }] } }),
  (s) => ({ fact: buildKey('service', s.name), current: JSON.stringify(s) }),
  (s) => ({ services: [{ name: s.name, spec: s }] }),
  (s) => ({ text: JSON.stringify({ nested: JSON.stringify(s) }) }),
  (s) => [{ replica: 'api-1', spec: s }],
];

/** Layers that hold anything: an object, an array, JSON text in a field, a non-spec stored value. */
const layers: ((x: unknown) => unknown)[] = [
  (x) => ({ nested: x }),
  (x) => [1, x],
  (x) => ({ text: JSON.stringify(x) }),
  (x) => ({ key: '/decisions/replica/api-1/x', value: JSON.stringify(x) }),
];

describe('the evidence redactor', () => {
  it('no planted value survives, whatever structure holds the spec (fuzzed)', () => {
    fc.assert(
      fc.property(specWith, fc.integer({ min: 0, max: wraps.length - 1 }), fc.array(fc.integer({ min: 0, max: layers.length - 1 }), { maxLength: 4 }), ({ spec, values }, w, path) => {
        let x: unknown = wraps[w]!(spec);
        for (const i of path) x = layers[i]!(x);
        const out = JSON.stringify(redactDeep(x, 'evidence'));
        for (const v of values) expect(out.includes(v) || out.includes(JSON.stringify(v).slice(1, -1)), `${v} leaked from ${out}`).toBe(false);
      }),
      opts(300),
    );
  });

  it('tokens, bearer credentials, URL passwords and sealed values in free text (fuzzed)', () => {
    const token = fc.constantFrom('admin', 'join', 'node', 'reader', 'deployer').chain((r) => fc.string({ unit: fc.constantFrom(...'abcXYZ019_-'.split('')), minLength: 43, maxLength: 43 }).map((t) => `cca_${r}_${t}`));
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), token, planted.filter((p) => !/[#?%/]/.test(p)), fc.string({ maxLength: 30 }), (before, tok, pass, after) => {
        const text = `${before} Authorization: Bearer ${tok} postgres://u:${pass}@db:5432/x ${tok} cca:sealed:v1:k1:abc:iv:${pass.replace(/\W/g, 'x')}:tag ${after}`;
        const out = JSON.stringify(redactDeep({ line: text, nested: [text] }, 'evidence'));
        expect(out.includes(tok.slice(8)), out).toBe(false);
        expect(out.includes(`:${pass}@`), out).toBe(false);
        expect(out).not.toMatch(/cca:sealed:v1:k1/);
      }),
      opts(300),
    );
  });

  it('what each level keeps: secrets level hides secret values only; evidence keeps lengths, names and structure', () => {
    const v = validateService({ name: 'api', image: 'busybox:1.35', env: { MODE: 'prod' }, secrets: [{ name: 'db', value: 'hunter22', path: '/run/db' }], configs: [{ name: 'c', path: '/etc/c', content: 'abc' }] });
    if (!v.ok) throw new Error('bad spec');
    expect(redactSpec(v.value)).toMatchObject({ env: { MODE: 'prod' }, secrets: [{ name: 'db', value: REDACTED, path: '/run/db' }], configs: [{ content: 'abc' }] });
    expect(redactSpec(v.value, 'evidence')).toMatchObject({ env: { MODE: '(redacted: 4 characters)' }, configs: [{ path: '/etc/c', content: '(redacted: 3 characters)' }] });
    expect(redactDeep({ sha256: 'abcd', credential: 'cca_node_x', other: 'plain text' }, 'evidence')).toEqual({ sha256: REDACTED, credential: REDACTED, other: 'plain text' });
    expect(redactText('x Bearer abc.def y')).toBe(`x Bearer ${REDACTED} y`);
    expect(redactUrl('postgres://u:pw@h:5432/d')).toBe('postgres://u:***@h:5432/d');
  });
});
