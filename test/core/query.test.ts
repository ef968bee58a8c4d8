import { describe, expect, test } from 'vitest';
import { checkPredicate, checkQuery, fieldTypeAt, kindNames, kindOfPrefix, matches, matchesAll, parsePredicates, project, rowOf, topFields, type Predicate } from '../../core/query.js';
import { layout } from '../../core/keys.js';

/** An observation as the agent writes it, decoded (defaults filled in). */
const obs = {
  replica: 'web-1',
  service: 'web',
  node: 'n1',
  tenure: 4,
  state: 'exited',
  exitCode: 137,
  restarts: 3,
  health: { liveness: 'ok', readiness: 'failing' },
  image: 'sha256:abc',
  at: 10,
};

const pred = (raw: unknown[]): Predicate => {
  const p = checkPredicate('observed', raw, { at: 'where[0]', text: JSON.stringify(raw) });
  if ('code' in p) throw new Error(`${p.code} ${p.message}`);
  return p;
};
const holds = (raw: unknown[], row: unknown = obs) => matches(row, pred(raw));

describe('operators on a decoded fact', () => {
  test('= compares text forms (so the CLI\'s "3" matches the number 3); a missing field is never equal', () => {
    expect(holds(['state', '=', 'exited'])).toBe(true);
    expect(holds(['state', '=', 'running'])).toBe(false);
    expect(holds(['restarts', '=', 3])).toBe(true);
    expect(holds(['restarts', '=', '3'])).toBe(true);
    expect(holds(['health.readiness', '=', 'failing'])).toBe(true);
    expect(holds(['address', '=', ''])).toBe(false);
  });

  test('!= is the negation of =, so a fact without the field is "not equal"', () => {
    expect(holds(['state', '!=', 'running'])).toBe(true);
    expect(holds(['state', '!=', 'exited'])).toBe(false);
    expect(holds(['address', '!=', '10.0.0.1'])).toBe(true);
  });

  test('< and > compare numbers only; a missing or non-numeric field does not match', () => {
    expect(holds(['restarts', '>', 2])).toBe(true);
    expect(holds(['restarts', '>', 3])).toBe(false);
    expect(holds(['restarts', '<', 4])).toBe(true);
    expect(holds(['restarts', '<', 3])).toBe(false);
    expect(holds(['exitCode', '<', 200], { ...obs, exitCode: undefined })).toBe(false);
  });

  test('in holds when any listed value is equal', () => {
    expect(holds(['state', 'in', ['running', 'exited']])).toBe(true);
    expect(holds(['state', 'in', ['running', 'failed']])).toBe(false);
    expect(holds(['exitCode', 'in', [1, '137']])).toBe(true);
    expect(holds(['address', 'in', ['']])).toBe(false);
  });

  test('exists holds for a present field, even a falsy one', () => {
    expect(holds(['exitCode', 'exists'])).toBe(true);
    expect(holds(['exitCode', 'exists'], { ...obs, exitCode: 0 })).toBe(true);
    expect(holds(['address', 'exists'])).toBe(false);
    expect(holds(['health.liveness', 'exists'])).toBe(true);
  });

  test('prefix compares the start of the text form', () => {
    expect(holds(['image', 'prefix', 'sha256:'])).toBe(true);
    expect(holds(['image', 'prefix', 'sha512:'])).toBe(false);
    expect(holds(['image', 'prefix', 'abc'])).toBe(false);
    expect(holds(['replica', 'prefix', 'web-'])).toBe(true);
    expect(holds(['address', 'prefix', ''])).toBe(false);
  });

  test('predicates are a conjunction; select keeps the named paths and drops absent ones', () => {
    expect(matchesAll(obs, [pred(['service', '=', 'web']), pred(['state', '!=', 'running'])])).toBe(true);
    expect(matchesAll(obs, [pred(['service', '=', 'web']), pred(['state', '=', 'running'])])).toBe(false);
    expect(project(obs, [['replica'], ['health', 'readiness'], ['address']])).toEqual({ replica: 'web-1', 'health.readiness': 'failing' });
  });

  test('a row holds the key\'s segments for the fields the fact lacks, never over the fact\'s own', () => {
    expect(rowOf('assigned', { node: 'n1', replica: 'r1' }, { replica: 'web-1' })).toEqual({ node: 'n1', replica: 'web-1' });
  });
});

describe('predicate checks, located', () => {
  const problem = (raw: unknown, kind: 'observed' | 'replica' | 'service' = 'observed') => {
    const r = checkQuery(kind, [['state', '=', 'x'], raw], undefined);
    if (r.ok) throw new Error('accepted');
    return r.diagnostics[0]!;
  };

  test('an unknown operator names the predicate and the operators', () => {
    const d = problem(['state', '~', 'x']);
    expect(d.code).toBe('CCA-E0010');
    expect(d.message).toBe('where[1] ["state","~","x"]: the operator ~ is not one a query knows');
  });

  test('a field the kind does not have, derived from its schema (nested too), lists the kind\'s fields', () => {
    const d = problem(['stat', '=', 'x']);
    expect(d.code).toBe('CCA-E0011');
    expect(d.message).toContain('where[1]');
    expect(d.message).toContain('observed (/observed/) facts have no field stat');
    expect(d.fix).toContain('state');
    expect(problem(['health.ready', '=', 'ok']).code).toBe('CCA-E0011');
    expect(problem(['state.x', '=', 'ok']).code).toBe('CCA-E0011');
    // A record accepts any key below it, an array a numeric index.
    expect(checkQuery('service', [['labels.tier', '=', 'web'], ['secrets.0.name', 'exists']], ['ports.0.container']).ok).toBe(true);
    expect(checkQuery('service', [['secrets.first.name', 'exists']], undefined).ok).toBe(false);
  });

  test('a bad path is a syntax problem, not an unknown field', () => {
    expect(problem(['state..x', '=', 'x']).code).toBe('CCA-E0013');
    expect(problem([3, '=', 'x']).code).toBe('CCA-E0013');
  });

  test('wrong value types: < and > need numbers on numeric fields, in a list, exists nothing, prefix a string', () => {
    const lt = problem(['restarts', '<', 'three']);
    expect(lt.code).toBe('CCA-E0012');
    expect(lt.message).toBe('where[1] ["restarts","<","three"]: the value of <: < compares numbers, got "three"');
    expect(problem(['state', '>', 3]).message).toContain('state is a string field');
    expect(problem(['state', 'in', 'running']).message).toContain('in needs a list, got "running"');
    expect(problem(['state', 'in', [['a']]]).code).toBe('CCA-E0012');
    expect(problem(['state', 'exists', true]).message).toContain('exists takes no value');
    expect(problem(['state', 'prefix', 1]).message).toContain('prefix needs a string');
    expect(problem(['state', '=']).message).toContain('= needs a value');
    expect(problem(['state', '=', { a: 1 }]).code).toBe('CCA-E0012');
    expect(problem('state=x').code).toBe('CCA-E0012');
  });

  test('every problem is reported, select entries too', () => {
    const r = checkQuery('replica', [['nope', '=', 1], ['desired', '~', 'run']], ['id', 'bogus']);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.diagnostics.map((d) => `${d.code} ${d.params.at}`)).toEqual(['CCA-E0011 where[0]', 'CCA-E0010 where[1]', 'CCA-E0011 select[1]']);
  });

  test('fields come from the schemas: key segments count as fields, transforms read through', () => {
    expect(topFields('assigned')).toEqual(expect.arrayContaining(['node', 'replica', 'spec', 'tenure']));
    expect(topFields('service')).toEqual(expect.arrayContaining(['name', 'image', 'replicas', 'secrets']));
    expect(fieldTypeAt(layout.replica.schema, ['retired'])).toBe('boolean');
    expect(fieldTypeAt(layout.observed.schema, ['restarts'])).toBe('number');
    expect(fieldTypeAt(layout.observed.schema, ['state'])).toBe('string');
  });

  test('every kind in the layout: its top-level fields are known and pass the check', () => {
    for (const kind of Object.keys(layout) as (keyof typeof layout)[]) {
      const fields = topFields(kind);
      expect(fields.length, kind).toBeGreaterThan(0);
      const r = checkQuery(kind, fields.map((f) => [f, 'exists']), fields);
      expect(r.ok, `${kind}: ${r.ok ? '' : r.diagnostics[0]!.message}`).toBe(true);
    }
  });

  test('kinds by prefix and by name', () => {
    expect(kindOfPrefix('/replicas/')).toBe('replica');
    expect(kindOfPrefix('/replicas/web/')).toBe('replica');
    expect(kindOfPrefix('/observed')).toBe('observed');
    expect(kindOfPrefix('/observed-volumes/n1/')).toBe('observedVolume');
    expect(kindOfPrefix('/auth/')).toBeUndefined();
    expect(kindOfPrefix('/')).toBeUndefined();
    const names = kindNames();
    expect(['replicas', 'replica', 'nodes', 'services', 'assigned', 'observed', 'node-status', 'nodestatus', 'observed-volumes', 'endpoints'].map((n) => names.get(n))).toEqual(['replica', 'replica', 'node', 'service', 'assigned', 'observed', 'nodeStatus', 'nodeStatus', 'observedVolume', 'endpoints']);
  });
});

describe('the CLI\'s predicate syntax', () => {
  const raws = (expr: string) => {
    const r = parsePredicates(expr);
    if (!r.ok) throw new Error(r.diagnostics[0]!.message);
    return r.value.map((p) => p.raw);
  };
  const error = (expr: string) => {
    const r = parsePredicates(expr);
    if (r.ok) throw new Error('accepted');
    return r.diagnostics[0]!;
  };

  test('every operator', () => {
    expect(raws('service=web,state!=running')).toEqual([['service', '=', 'web'], ['state', '!=', 'running']]);
    expect(raws('restarts>2, restarts<10')).toEqual([['restarts', '>', 2], ['restarts', '<', 10]]);
    expect(raws('state in (running|exited), node=n1|n2')).toEqual([['state', 'in', ['running', 'exited']], ['node', 'in', ['n1', 'n2']]]);
    expect(raws('exitCode?,image^=sha256:')).toEqual([['exitCode', 'exists'], ['image', 'prefix', 'sha256:']]);
    expect(raws('health.readiness = failing')).toEqual([['health.readiness', '=', 'failing']]);
  });

  test('quoted values hold commas, bars and spaces', () => {
    expect(raws('reason="a, b | c",labels.x in ("p q"|r)')).toEqual([['reason', '=', 'a, b | c'], ['labels.x', 'in', ['p q', 'r']]]);
    expect(raws('reason=""')).toEqual([['reason', '=', '']]);
  });

  test('< with text stays text, so the kind\'s check says < compares numbers', () => {
    expect(raws('restarts<many')).toEqual([['restarts', '<', 'many']]);
  });

  test('syntax errors say which predicate and which column', () => {
    const d = error('service=web,state~running');
    expect(d.code).toBe('CCA-E0014');
    expect(d.params).toMatchObject({ index: 2, column: 18 });
    expect(d.message).toBe('predicate 2 (state~running) at column 18 of "service=web,state~running": expected an operator after state: = != < > ^= ? or in (…), not "~"');
    expect(error('service=').message).toContain('= needs a value');
    expect(error('a=1,,b=2').params).toMatchObject({ index: 2, column: 5 });
    expect(error('a=1,  b~2').params).toMatchObject({ index: 2, column: 8, text: 'b~2' });
    expect(error('state in (a|b').message).toContain('missing its closing parenthesis');
    expect(error('x?1').message).toContain('takes no value');
    expect(error('x>1|2').message).toContain('a | list of values goes with = or in');
    expect(error('reason="abc').message).toContain('not closed');
    expect(error('=web').message).toContain('expected a field name');
    expect(error('').message).toContain('the expression is empty');
  });
});
