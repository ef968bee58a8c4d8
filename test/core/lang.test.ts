import { describe, expect, test } from 'vitest';
import { format, formatSource, parse, toCca } from '../../core/lang/index.js';
import type { ServiceSpec } from '../../core/model/index.js';

const svc = (body: string) => `service web {\n  image = "busybox:1.35"\n${body}\n}\n`;
function one(body: string): ServiceSpec {
  const r = parse(svc(body), 't.cca');
  expect(r.diagnostics.map((d) => `${d.code} ${d.message}`)).toEqual([]);
  return r.services[0]!;
}
const codes = (text: string) => parse(text, 't.cca').diagnostics.map((d) => d.code);

describe('units', () => {
  test.each([
    ['64Mi', 64 * 2 ** 20],
    ['1.5Gi', 1.5 * 2 ** 30],
    ['512', 512],
    ['1G', 1e9],
    ['2Ti', 2 * 2 ** 40],
    ['0.5Ki', 512],
  ])('memory %s', (text, bytes) => expect(one(`memory = ${text}`).resources.memoryBytes).toBe(bytes));

  test.each([
    ['500m', 500],
    ['0.5', 500],
    ['2', 2000],
    ['1.25', 1250],
    ['0.001', 1],
  ])('cpu %s', (text, millis) => expect(one(`cpu = ${text}`).resources.cpuMillis).toBe(millis));

  test.each([
    ['10s', 10_000],
    ['2m', 120_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['1h', 3_600_000],
    ['1d2h', 93_600_000],
  ])('duration %s', (text, ms) => expect(one(`stop_grace = ${text}`).stopGraceMs).toBe(ms));

  test('m means millicores for cpu and minutes for durations', () => {
    const s = one('cpu = 2m\nstop_grace = 2m');
    expect(s.resources.cpuMillis).toBe(2);
    expect(s.stopGraceMs).toBe(120_000);
  });

  test('wrong units, inexact values and bare durations are coded', () => {
    expect(codes(svc('memory = 64Mb'))).toEqual(['CCA-E0213']);
    expect(codes(svc('cpu = 1Gi'))).toEqual(['CCA-E0213']);
    expect(codes(svc('stop_grace = 10'))).toEqual(['CCA-E0213']);
    expect(codes(svc('memory = 0.1Gi'))).toEqual(['CCA-E0218']);
    expect(codes(svc('replicas = 2.5'))).toEqual(['CCA-E0218']);
    expect(codes(svc('memory = 1m30s'))).toEqual(['CCA-E0213']);
    expect(codes(svc('memory = 99999999999999999999Ti'))).toEqual(['CCA-E0302']);
    expect(codes(svc('cpu = 1.2.3'))).toEqual(['CCA-E0204']);
  });

  test('percentages and counts', () => {
    const s = one('autoscale { min = 1 max = 4 target_cpu = 80% }\nupdate { max_surge = 50% max_unavailable = 2 }');
    expect(s.autoscale).toEqual({ min: 1, max: 4, targetCpuPercent: 80 });
    expect(s.update).toEqual({ maxSurge: '50%', maxUnavailable: 2, progressDeadlineMs: 600_000 });
  });
});

describe('strings', () => {
  test('escapes', () => {
    const s = one(String.raw`command = ["a\"b", "tab\there", "nl\n", "back\\slash", "\u00e9\u{1F600}", "nul\0"]`);
    expect(s.command).toEqual(['a"b', 'tab\there', 'nl\n', 'back\\slash', 'é😀', 'nul\0']);
  });

  test('raw triple-quoted strings keep everything but the first line break', () => {
    const s = one('config c {\n path = "/c"\n content = """\nline "one"\n  \\n stays\n"""\n}');
    expect(s.configs[0]!.content).toBe('line "one"\n  \\n stays\n');
  });

  test('bad escapes and unterminated strings are coded and the rest still parses', () => {
    const r = parse('service web {\n  image = "a\\qb"\n  replicas = "x\n  cpu = 2\n}\n', 't.cca');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CCA-E0203', 'CCA-E0202', 'CCA-E0212']);
  });
});

describe('structure', () => {
  test('several services per file, comments of three kinds', () => {
    const r = parse('# a\nservice a { image = "x" } // b\n/* c\n */ service b { image = "y" }\n', 't.cca');
    expect(r.diagnostics).toEqual([]);
    expect(r.services.map((s) => s.name)).toEqual(['a', 'b']);
  });

  test('lists, maps with quoted keys, trailing commas, : in maps', () => {
    const s = one('command = ["a", "b",]\nlabels = { team = "x", "app.io/tier": "web", }\nenv = { A = "1" B = 2 C = true }');
    expect(s.command).toEqual(['a', 'b']);
    expect(s.labels).toEqual({ team: 'x', 'app.io/tier': 'web' });
    expect(s.env).toEqual({ A: '1', B: '2', C: 'true' });
  });

  test('constraint expressions', () => {
    const s = one(
      'require zone in ["a", "b"]\nrequire label.disk == "ssd"\nrestrict node != n3\nrestrict label."x.io/y" not in [p, "q"]\nprefer zone == "a" weight 70\nprefer node == "n1"\naccept gpu\naccept "dedicated=db"',
    );
    expect(s.placement.require).toEqual([
      { attribute: 'zone', op: 'in', values: ['a', 'b'] },
      { attribute: 'label.disk', op: '==', values: ['ssd'] },
    ]);
    expect(s.placement.restrict).toEqual([
      { attribute: 'node', op: '!=', values: ['n3'] },
      { attribute: 'label.x.io/y', op: 'not in', values: ['p', 'q'] },
    ]);
    expect(s.placement.prefer.map((p) => p.weight)).toEqual([70, 50]);
    expect(s.placement.accept).toEqual(['gpu', 'dedicated=db']);
  });

  test('bad constraints are coded with a suggestion', () => {
    const r = parse(svc('require zon in ["a"]\nrequire zone == ["a"]\nrequire label == "x"\nrestrict node != "a" weight 5\nrequire zone ~ "a"'), 't.cca');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CCA-E0217', 'CCA-E0217', 'CCA-E0217', 'CCA-E0217', 'CCA-E0201', 'CCA-E0217']);
    expect(r.diagnostics[0]!.message).toContain('did you mean `zone`?');
  });

  test('network policies', () => {
    const s = one('port http { container = 8080 }\nallow from service api on port 8080\nallow from service admin on port http\nallow from service "ops"');
    expect(s.network.allow).toEqual([{ service: 'api', port: 8080 }, { service: 'admin', port: 'http' }, { service: 'ops' }]);
    expect(codes(svc('allow service api'))).toEqual(['CCA-E0205']);
    expect(codes(svc('port http { container = 80 }\nallow from service api on port admin'))).toEqual(['CCA-E0310']);
  });

  test('allow from an unknown service is an error against the cluster\'s services (apply), with a suggestion', () => {
    const text = svc('port http { container = 80 }\nallow from service apii on port http');
    expect(codes(text)).toEqual([]); // a lone file: its clients may be applied from another
    const r = parse(text, 't.cca', { existing: ['api', 'db'] });
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CCA-E0323']);
    expect(r.diagnostics[0]!.message).toContain('`apii`');
    expect(r.diagnostics[0]!.fix).toContain('did you mean `api`?');
    expect(r.diagnostics[0]!.span?.line).toBe(4);
    expect(parse(text.replace('apii', 'api'), 't.cca', { existing: ['api'] }).diagnostics).toEqual([]);
    expect(parse(`${text}service apii {\n  image = "busybox:1.35"\n}\n`, 't.cca', { existing: [] }).diagnostics).toEqual([]);
  });

  test('health checks of each kind, with the first port as default', () => {
    const s = one('port http { container = 8080 }\nhealth liveness { exec = ["true"] }\nhealth readiness { tcp = http every = 5s timeout = 2s failures = 5 delay = 1s }');
    expect(s.health.liveness!.probe).toEqual({ type: 'exec', command: ['true'] });
    expect(s.health.readiness).toEqual({ probe: { type: 'tcp', port: 'http' }, intervalMs: 5000, timeoutMs: 2000, failureThreshold: 5, initialDelayMs: 1000 });
    expect(one('port http { container = 80 }\nhealth readiness { http = "/" }').health.readiness!.probe).toEqual({ type: 'http', path: '/', port: 'http' });
    expect(codes(svc('health startup { http = "/" }'))).toEqual(['CCA-E0216']);
    expect(codes(svc('health readiness { http = "/" }'))).toEqual(['CCA-E0310']);
  });

  test('several errors are reported at once, in source order, with spans', () => {
    const r = parse('service web {\n  replica = 3\n  image = busybox\n  cpu = 1Gi\n  port http { contaner = 80 }\n}\n', 'w.cca');
    expect(r.diagnostics.map((d) => [d.code, d.span!.line, d.span!.col])).toEqual([
      ['CCA-E0210', 2, 3],
      ['CCA-E0212', 3, 11],
      ['CCA-E0213', 4, 9],
      ['CCA-E0210', 5, 15],
      ['CCA-E0219', 5, 3],
    ].sort((a, b) => (a[1] as number) - (b[1] as number) || (a[2] as number) - (b[2] as number)));
    expect(r.diagnostics[0]!.fix).toBe('did you mean `replicas`?');
    expect(r.diagnostics.every((d) => d.span!.file === 'w.cca')).toBe(true);
  });

  test('recovery after a broken line keeps checking the next ones', () => {
    const r = parse('service web {\n  image = "x"\n  = 3\n  replicas = "three"\n  }\n}\nservice ok { image = "y" }\n', 't.cca');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CCA-E0205', 'CCA-E0212', 'CCA-E0205']);
    expect(r.services.map((s) => s.name)).toEqual(['ok']);
  });

  test('duplicate fields and blocks', () => {
    expect(codes(svc('replicas = 1\nreplicas = 2'))).toEqual(['CCA-E0211']);
    expect(codes(svc('update { max_surge = 1 }\nupdate { max_surge = 2 }'))).toEqual(['CCA-E0211']);
    expect(codes(svc('env = { A = "1", A = "2" }'))).toEqual(['CCA-E0211']);
  });

  test('blocks and fields in the wrong form', () => {
    expect(codes(svc('port = 8080'))).toEqual(['CCA-E0212']);
    expect(codes(svc('replicas { }'))).toEqual(['CCA-E0212']);
    expect(codes(svc('port { container = 80 }'))).toEqual(['CCA-E0214']);
    expect(codes(svc('update fast { }'))).toEqual(['CCA-E0214']);
    expect(codes('replicas = 3\n')).toEqual(['CCA-E0209']);
    expect(codes('}\n')).toEqual(['CCA-E0205']);
  });

  test('after may name services in the file or given as existing', () => {
    const text = 'service a { image = "x" after = [b, "c"] }\nservice b { image = "x" }\n';
    expect(codes(text)).toEqual(['CCA-E0305']);
    expect(parse(text, 't', { existing: ['c'] }).diagnostics).toEqual([]);
    expect(parse(text, 't', { existing: 'unchecked' }).diagnostics).toEqual([]);
  });

  test('a CRLF file and a byte-order mark parse like the plain one', () => {
    const text = 'service a {\n  image = "x" # c\n  replicas = 2\n}\n';
    expect(parse(`\ufeff${text.replace(/\n/g, '\r\n')}`, 't')).toEqual(parse(text, 't'));
  });
});

describe('format', () => {
  test('canonical layout', () => {
    const text = 'service web{image="x" replicas=3\ncommand=["a","b"]\n  port http {container=80}\n\n\n\n# c\nrequire zone in ["a"]}';
    expect(format(text)).toBe(
      'service web {\n  image    = "x"\n  replicas = 3\n  command  = ["a", "b"]\n  port http { container = 80 }\n\n  # c\n  require zone in ["a"]\n}\n',
    );
  });

  test('text with syntax errors comes back unchanged, with the diagnostics', () => {
    const r = formatSource('service web { image = }', 'x.cca');
    expect(r.ok).toBe(false);
    expect(r.text).toBe('service web { image = }');
    expect(r.diagnostics[0]!.code).toBe('CCA-E0205');
  });

  test('long lists break one item per line and stay idempotent', () => {
    const items = Array.from({ length: 12 }, (_, i) => `"argument-${i}"`).join(', ');
    const out = format(svc(`args = [${items}]`));
    expect(out).toContain('  args = [\n    "argument-0",\n');
    expect(format(out)).toBe(out);
  });
});

describe('toCca', () => {
  test('secrets are redacted unless asked for', () => {
    const s = one('secret db { value = "hunter2" path = "/run/db" }');
    expect(toCca(s)).not.toContain('hunter2');
    expect(toCca(s)).toContain('(redacted)');
    expect(toCca(s, { secrets: 'include' })).toContain('hunter2');
  });
});

describe('several files applied together', () => {
  test('after may cross files; duplicates and cycles are reported in the file that holds them', async () => {
    const { parseFiles } = await import('../../core/lang/index.js');
    const ok = parseFiles([
      { name: 'db.cca', text: 'service db { image = "x" }\n' },
      { name: 'api.cca', text: 'service api { image = "x" after = [db] }\n' },
    ]);
    expect(ok.diagnostics).toEqual([]);
    expect(ok.services.map((s) => s.name)).toEqual(['db', 'api']);
    const bad = parseFiles([
      { name: 'a.cca', text: 'service a { image = "x" after = [b] }\n' },
      { name: 'b.cca', text: 'service b { image = "x" after = [a] }\nservice a { image = "y" }\n' },
    ]);
    expect(bad.diagnostics.map((d) => [d.code, d.span!.file, d.span!.line])).toEqual([
      ['CCA-E0306', 'a.cca', 1],
      ['CCA-E0309', 'b.cca', 2],
    ]);
  });
});

describe('habits from other formats', () => {
  test('commas between entries are accepted and dropped by the formatter', () => {
    const text = 'service web { image = "x", replicas = 2, autoscale { min = 1, max = 3 }, }\n';
    expect(parse(text, 't').diagnostics).toEqual([]);
    expect(format(text)).toBe('service web {\n  image    = "x"\n  replicas = 2\n  autoscale { min = 1 max = 3 }\n}\n');
  });

  test('`:` instead of `=` is reported once and the value is still checked', () => {
    const r = parse('service web {\n  image: "x"\n  replicas: "three"\n}\n', 't');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CCA-E0205', 'CCA-E0205', 'CCA-E0212']);
    expect(r.diagnostics[0]!.fix).toBe('fields are set with =: write image = VALUE');
  });

  test('units from elsewhere get the unit they probably meant', () => {
    expect(parse(svc('memory = 64MB'), 't').diagnostics[0]!.fix).toContain('64M or 64Mi');
    expect(parse(svc('stop_grace = 30'), 't').diagnostics[0]!.fix).toContain('30s');
    expect(parse(svc('port http { container = "8080" }'), 't').diagnostics[0]!.fix).toBe('write container = 8080');
  });
});

describe('pull block', () => {
  test('lowers to spec.pull, prints back, and a secret the service does not declare is CCA-E0556', () => {
    const src = 'service web {\n  image = "127.0.0.1:5000/team/web:2"\n  pull { policy = always secret = "regcred" }\n  secret regcred { value = "deploy:pw" }\n}\n';
    const r = parse(src, 'web.cca');
    expect(r.diagnostics).toEqual([]);
    expect(r.services[0]!.pull).toEqual({ policy: 'always', secret: 'regcred' });
    expect(toCca(r.services[0]!)).toContain('pull { policy = always secret = "regcred" }');
    expect(parse('service web {\n  image = "nginx:1.27"\n}\n', 'w.cca').services[0]!.pull).toBeUndefined();
    const bad = parse('service web {\n  image = "nginx:1.27"\n  pull { secret = "nope" }\n}\n', 'w.cca');
    expect(bad.diagnostics.map((d) => d.code)).toEqual(['CCA-E0556']);
  });
});
