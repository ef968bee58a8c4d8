import fc from 'fast-check';
import type { ServiceSpecInput } from '../../../core/model/index.js';

/**
 * Generators of valid service specs, built valid by construction (names unique, paths
 * distinct, ports referenced exist) so no run is wasted on filtering.
 */
const lower = 'abcdefghijklmnopqrstuvwxyz';
const label = (max = 20) =>
  fc
    .tuple(fc.constantFrom(...lower), fc.stringMatching(new RegExp(`^[a-z0-9-]{0,${max - 2}}$`)), fc.constantFrom(...(lower + '0123456789')))
    .map(([a, mid, z]) => (mid.length === 0 ? a : `${a}${mid}${z}`));
/** Any text, including control characters, quotes, backslashes, newlines and astral code points. */
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('', '"', '\\', '\n', '"""', 'a\nb"', '\t\r\0', 'x"""y\n', '\u{1F600}', '${x}', '# not a comment', '/* nor this */'),
);
const envName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/);
const labelKey = fc.oneof(label(10), fc.tuple(label(8), label(8)).map(([a, b]) => `${a}.io/${b}`));
const image = fc.tuple(fc.constantFrom('busybox', 'nginx', 'ghcr.io/acme/api', 'localhost:5000/x'), fc.option(fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,6}$/), { nil: undefined })).map(([n, t]) => (t ? `${n}:${t}` : n));
const ms = fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 1, max: 7 * 86_400_000 }));
const constraint = fc.oneof(
  fc.record({ attribute: fc.constantFrom('zone', 'node', 'label.disk', 'label.x.io/y-z'), op: fc.constantFrom('==' as const, '!=' as const), values: fc.tuple(text).map((v) => [...v]) }),
  fc.record({ attribute: fc.constantFrom('zone', 'node', 'label.gpu'), op: fc.constantFrom('in' as const, 'not in' as const), values: fc.array(text, { minLength: 1, maxLength: 3 }) }),
);
const countOrPercent = fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 100 }).map((n) => `${n}%`));

function uniqueNames(min: number, max: number) {
  return fc.uniqueArray(label(12), { minLength: min, maxLength: max });
}

export const serviceInput = (name = label()): fc.Arbitrary<ServiceSpecInput> =>
  fc
    .record({
      name,
      image,
      command: fc.array(text, { maxLength: 3 }),
      args: fc.array(text, { maxLength: 3 }),
      env: fc.dictionary(envName, text, { maxKeys: 3 }),
      workdir: fc.option(fc.constantFrom('/', '/srv', '/app/x y'), { nil: undefined }),
      labels: fc.dictionary(labelKey, fc.string({ maxLength: 10 }), { maxKeys: 3 }),
      cpuMillis: fc.integer({ min: 1, max: 64_000 }),
      memoryBytes: fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 1, max: 4096 }).map((n) => n * 2 ** 20)),
      portNames: uniqueNames(0, 3),
      portNumbers: fc.uniqueArray(fc.integer({ min: 1, max: 65_535 }), { minLength: 3, maxLength: 3 }),
      udp: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      liveness: fc.option(fc.constantFrom('http', 'tcp', 'exec'), { nil: undefined }),
      readiness: fc.option(fc.constantFrom('http', 'tcp', 'exec'), { nil: undefined }),
      interval: fc.integer({ min: 2, max: 600_000 }),
      failures: fc.integer({ min: 1, max: 100 }),
      delay: ms,
      spread: fc.constantFrom<('zone' | 'node')[]>([], ['zone'], ['node'], ['zone', 'node'], ['node', 'zone']),
      require: fc.array(constraint, { maxLength: 2 }),
      restrict: fc.array(constraint, { maxLength: 2 }),
      prefer: fc.array(fc.record({ constraint, weight: fc.integer({ min: 1, max: 100 }) }), { maxLength: 2 }),
      accept: fc.array(fc.constantFrom('gpu', 'dedicated=db', 'a.b/c=d-e'), { maxLength: 2 }),
      update: fc
        .record({ maxSurge: countOrPercent, maxUnavailable: countOrPercent, progressDeadlineMs: fc.integer({ min: 1, max: 7 * 86_400_000 }) })
        // Both zero is CCA-E0318: a roll could not move.
        .filter((u) => !(['0', '0%'].includes(String(u.maxSurge)) && ['0', '0%'].includes(String(u.maxUnavailable)))),
      autoscale: fc.option(fc.tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 100 })), { nil: undefined }),
      replicas: fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }),
      init: fc.array(fc.record({ image: fc.option(image, { nil: undefined }), command: fc.array(text, { minLength: 1, maxLength: 2 }), env: fc.dictionary(envName, text, { maxKeys: 2 }), timeoutMs: fc.integer({ min: 1, max: 3_600_000 }) }), { maxLength: 2 }),
      configs: fc.array(fc.record({ content: fc.oneof(text, fc.string({ maxLength: 200 })), mode: fc.integer({ min: 0, max: 0o777 }) }), { maxLength: 2 }), // setuid/setgid/sticky are CCA-E0327
      secrets: fc.array(fc.record({ value: text, where: fc.constantFrom('path', 'env', 'both'), env: envName, mode: fc.integer({ min: 0, max: 0o777 }) }), { maxLength: 2 }),
      volumes: fc.array(fc.record({ sizeBytes: fc.integer({ min: 1, max: 2 ** 45 }), readOnly: fc.boolean() }), { maxLength: 2 }),
      stopGraceMs: ms,
      restart: fc.constantFrom('always' as const, 'on-failure' as const, 'never' as const),
      allow: fc.array(fc.record({ service: label(10), byName: fc.boolean(), number: fc.integer({ min: 1, max: 65_535 }), any: fc.boolean() }), { maxLength: 2 }),
    })
    .map((g) => {
      const ports = g.portNames.map((name, i) => ({ name, container: g.portNumbers[i]!, protocol: g.udp[i] ? ('udp' as const) : ('tcp' as const) }));
      const probe = (kind: string | undefined, n: number) => {
        if (kind === undefined || (kind !== 'exec' && ports.length === 0)) return undefined;
        const port = ports[n % ports.length];
        const p =
          kind === 'http'
            ? { type: 'http' as const, path: '/health', port: port!.name }
            : kind === 'tcp'
              ? { type: 'tcp' as const, port: n % 2 === 0 ? port!.name : port!.container }
              : { type: 'exec' as const, command: ['true', 'x'] };
        return { probe: p, intervalMs: g.interval, timeoutMs: Math.max(1, g.interval - 1 - n), failureThreshold: g.failures, initialDelayMs: g.delay };
      };
      const [min, span, target] = g.autoscale ?? [0, 0, 0];
      const autoscale = g.autoscale ? { min, max: min + span, targetCpuPercent: target } : undefined;
      const replicas = autoscale ? (g.replicas === undefined ? undefined : min + (g.replicas % (span + 1))) : g.replicas;
      const spec: ServiceSpecInput = {
        name: g.name,
        image: g.image,
        command: g.command,
        args: g.args,
        env: g.env,
        labels: g.labels,
        resources: { cpuMillis: g.cpuMillis, memoryBytes: g.memoryBytes },
        ports,
        health: {},
        placement: { spread: g.spread, require: g.require, restrict: g.restrict, prefer: g.prefer, accept: g.accept },
        update: g.update,
        init: g.init.map((s, i) => ({ ...s, name: `step-${i}` })),
        configs: g.configs.map((c, i) => ({ ...c, name: `cfg-${i}`, path: `/etc/c${i}.conf` })),
        secrets: g.secrets.map((s, i) => ({
          name: `sec-${i}`,
          value: s.value,
          mode: s.mode,
          ...(s.where !== 'env' ? { path: `/run/secrets/s${i}` } : {}),
          ...(s.where !== 'path' ? { env: s.env } : {}),
        })),
        volumes: g.volumes.map((v, i) => ({ ...v, name: `vol-${i}`, mountPath: `/data/v${i}` })),
        stopGraceMs: g.stopGraceMs,
        restart: g.restart,
        network: {
          allow: g.allow.map((a) =>
            a.any ? { service: a.service } : { service: a.service, port: a.byName && ports.length > 0 ? ports[0]!.name : a.number },
          ),
        },
      };
      if (g.workdir !== undefined) spec.workdir = g.workdir;
      if (replicas !== undefined) spec.replicas = replicas;
      if (autoscale) spec.autoscale = autoscale;
      const live = probe(g.liveness, 0);
      const ready = probe(g.readiness, 1);
      if (live) spec.health!.liveness = live;
      if (ready) spec.health!.readiness = ready;
      for (const s of spec.init!) if (s.image === undefined) delete s.image;
      return spec;
    });

const anyService = serviceInput();
const setNames = fc.uniqueArray(label(8), { minLength: 1, maxLength: 4 });

/** Several services with `after` edges only to earlier ones: a valid, acyclic set. Arbitraries are built once. */
export const serviceSet = setNames.chain((names) =>
  fc
    .tuple(
      fc.array(anyService, { minLength: names.length, maxLength: names.length }),
      fc.array(fc.array(fc.nat(), { maxLength: 3 }), { minLength: names.length, maxLength: names.length }),
    )
    .map(([specs, picks]) =>
      specs.map((s, i) => ({ ...s, name: names[i]!, after: i === 0 ? [] : [...new Set(picks[i]!.map((p) => names[p % i]!))] })),
    ),
);

/** Words and punctuation of the language, plus things that do not belong, for token soups. */
const vocabulary = [
  'service', 'web', 'api', 'image', 'replicas', 'cpu', 'memory', 'port', 'http', 'health', 'readiness', 'liveness',
  'require', 'restrict', 'prefer', 'accept', 'allow', 'from', 'on', 'weight', 'zone', 'node', 'label', 'in', 'not',
  'update', 'autoscale', 'init', 'config', 'secret', 'volume', 'after', 'spread', 'command', 'env', 'labels', 'max_surge', 'progress_deadline',
  'container', 'protocol', 'tcp', 'exec', 'every', 'timeout', 'true', 'false', 'min', 'max', 'target_cpu', 'size', 'mount',
  '{', '}', '[', ']', '=', '==', '!=', ',', '.', ':', '"busybox:1.35"', '"a\\nb"', '"\\u{1F600}"', '"unterminated', '"""raw\n"""',
  '"""open', '3', '0.5', '64Mi', '1.5Gi', '500m', '10s', '1m30s', '70%', '-1', '1.2.3', '99999999999999999999999Gi', '1e5',
  '# comment\n', '// comment\n', '/* block */', '/* open', '\n', '\n\n', '\t', '@', '~', '\\', '\u00e9', '\u{1F600}', '\0', '\r\n', '\ufeff',
];
export const tokenSoup = fc
  .array(fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...vocabulary) }, { weight: 1, arbitrary: fc.string({ maxLength: 4 }) }), { maxLength: 60 })
  .chain((toks) => fc.array(fc.constantFrom(' ', ' ', '\n', ''), { minLength: toks.length, maxLength: toks.length }).map((ws) => toks.map((t, i) => t + ws[i]).join('')));

export type Mutation = { at: number; del: number; insert: string };
/** A list of edits to apply to a seed text: deletions, insertions and duplications. */
export const mutations = fc.array(
  fc.record({ at: fc.nat(), del: fc.nat({ max: 8 }), insert: fc.oneof(fc.constantFrom(...vocabulary), fc.string({ maxLength: 3 }), fc.constant('')) }),
  { minLength: 1, maxLength: 4 },
);

export function mutate(seed: string, ms: Mutation[]): string {
  let s = seed;
  for (const m of ms) {
    const at = s.length === 0 ? 0 : m.at % (s.length + 1);
    s = s.slice(0, at) + m.insert + s.slice(at + m.del);
  }
  return s;
}

/**
 * Syntactically valid `.cca` text with comments and line breaks in every place the
 * grammar allows them, and random (often invalid) meaning: what the formatter must keep.
 */
const gap = fc.constantFrom(' ', ' ', '\n', '\n\n', '  \n  ', ' # note\n', ' // note\n', ' /* note */ ', '\n/* two\n lines */\n');
const word = fc.constantFrom('image', 'replicas', 'cpu', 'env', 'command', 'port', 'http', 'web', 'x-y', '_z', 'true', 'zone', 'weight', 'in');
const literal = fc.oneof(
  fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
  fc.constantFrom('"a\\tb"', '"""\nraw "x"\n"""', '"\\u{1F600}"', '3', '-1', '0.5', '64Mi', '1m30s', '70%', '1.5Gi'),
  word,
);
const joined = (parts: fc.Arbitrary<string[]>) =>
  parts.chain((ps) => fc.array(gap, { minLength: ps.length + 1, maxLength: ps.length + 1 }).map((gs) => ps.map((p, i) => gs[i] + p).join('') + gs[ps.length]));

const { value } = fc.letrec<{ value: string; list: string; map: string }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, literal, tie('list'), tie('map')),
  list: joined(fc.array(tie('value'), { maxLength: 3 }).map((vs) => ['[', ...vs.flatMap((v, i) => (i < vs.length - 1 ? [v, ','] : [v])), ']'])),
  map: joined(fc.array(fc.tuple(fc.oneof(word, fc.constant('"k.y/z"')), tie('value')), { maxLength: 3 }).map((es) => ['{', ...es.flatMap(([k, v]) => [k, '=', v]), '}'])),
}));
const rule = fc.oneof(
  fc.tuple(fc.constantFrom('require', 'restrict'), fc.constantFrom('zone', 'node', 'label.disk', 'label."a.b/c"'), fc.constantFrom('==', '!=', 'in', 'not in'), value).map((p) => joined(fc.constant(p))).chain((x) => x),
  fc.tuple(fc.constantFrom('zone', 'label.x'), value, fc.constantFrom('3', '50')).map(([s, v, w]) => joined(fc.constant(['prefer', s, '==', v, 'weight', w]))).chain((x) => x),
  value.map((v) => joined(fc.constant(['accept', v]))).chain((x) => x),
  fc.constantFrom('allow from service api on port 8080', 'allow from service "b"', 'allow from service c on port http'),
);
const attr = fc.tuple(word, value).chain(([w, v]) => joined(fc.constant([w, '=', v])));
const block = fc.tuple(word, fc.array(fc.oneof(word, fc.constant('"lbl"')), { maxLength: 2 }), fc.array(fc.oneof(attr, rule), { maxLength: 4 })).chain(([t, ls, items]) =>
  joined(fc.constant([t, ...ls, '{', ...items, '}'])),
);
export const validSyntax = fc.array(
  fc.tuple(word, fc.array(fc.oneof({ weight: 3, arbitrary: attr }, { weight: 1, arbitrary: block }, { weight: 1, arbitrary: rule }), { maxLength: 6 })).chain(([name, items]) =>
    joined(fc.constant(['service', name, '{', ...items, '}'])),
  ),
  { minLength: 1, maxLength: 3 },
).map((services) => services.join('\n'));
