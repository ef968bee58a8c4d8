import { describe, expect, test } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { buildKey, decodeFact, encodeFact, keyTable, layout, kindOfKey, parseKey, prefixOf } from '../../core/keys.js';
import type { KeyKind } from '../../core/keys.js';

describe('the key layout', () => {
  const kinds = Object.keys(layout) as KeyKind[];

  test('every kind builds keys that parse back to it', () => {
    for (const kind of kinds) {
      const values = layout[kind].params.map((p, i) => `${p}-${i}`);
      const key = (buildKey as (k: KeyKind, ...v: string[]) => string)(kind, ...values);
      expect(parseKey(key)).toEqual({ kind, params: Object.fromEntries(layout[kind].params.map((p, i) => [p, values[i]])) });
    }
  });

  test('prefixes never overlap, so one prefix never lists another kind', () => {
    const prefixes = kinds.map((k) => layout[k].prefix);
    for (const a of prefixes) for (const b of prefixes) if (a !== b) expect(b.startsWith(a)).toBe(false);
  });

  test('every prefix has exactly one writer and a value schema', () => {
    for (const row of keyTable()) {
      expect(row.writer.length).toBeGreaterThan(0);
      expect(row.pattern.startsWith('/')).toBe(true);
    }
    expect(keyTable().map((r) => r.pattern)).toEqual(expect.arrayContaining(['/services/<service>', '/replicas/<service>/<replica>', '/assigned/<node>/<replica>', '/allocations/<node>', '/nodes/<node>', '/node-status/<node>', '/observed/<node>/<replica>', '/decisions/<kind>/<subject>/<decision>', '/audit/<node>', '/endpoints/<service>', '/autoscale/<service>', '/network/<node>']));
  });

  test('prefixes narrow by leading segments and end in a slash', () => {
    expect(prefixOf('assigned')).toBe('/assigned/');
    expect(prefixOf('assigned', 'n1')).toBe('/assigned/n1/');
    expect(() => prefixOf('assigned', 'n1', 'r1')).toThrow();
  });

  test('bad segments are a coded bug, keys outside the layout parse to nothing', () => {
    let err: unknown;
    try {
      buildKey('service', 'a/b');
    } catch (e) {
      err = e;
    }
    expect(isCcaError(err, 'CCA-E0003')).toBe(true);
    expect(parseKey('/services/a/b')).toBeUndefined();
    expect(parseKey('/elsewhere/x')).toBeUndefined();
    expect(parseKey('/services/')).toBeUndefined();
  });

  test('values round-trip through their schema; malformed ones are a coded bug', () => {
    const text = encodeFact('nodeStatus', { node: 'n1', tenure: 7, state: 'ready', since: 0 });
    expect(decodeFact('nodeStatus', '/node-status/n1', text)).toEqual({ node: 'n1', tenure: 7, state: 'ready', since: 0, reason: '' });
    for (const bad of ['not json', '{"node":"n1"}']) {
      let err: unknown;
      try {
        decodeFact('nodeStatus', '/node-status/n1', bad);
      } catch (e) {
        err = e;
      }
      expect(isCcaError(err, 'CCA-E0002')).toBe(true);
    }
    const spec = encodeFact('service', { name: 'web', image: 'busybox:1.35' });
    expect(decodeFact('service', '/services/web', spec).replicas).toBe(1);
  });
});

describe('redaction of facts', () => {
  test('specs and assignments lose their secret values; other facts are untouched', async () => {
    const { redactFact, decodeFact: decode, encodeFact: encode } = await import('../../core/keys.js');
    const spec = decode('service', '/services/w', encode('service', { name: 'w', image: 'x', secrets: [{ name: 's', value: 'hunter2', path: '/s' }] }));
    expect(JSON.stringify(redactFact('service', spec))).not.toContain('hunter2');
    const assignment = decode(
      'assigned',
      '/assigned/n1/r1',
      encode('assigned', { replica: 'r1', service: 'w', node: 'n1', tenure: 1, resources: { cpuMillis: 1, memoryBytes: 1 }, specRevision: 3, spec, placedAt: 0 }),
    );
    expect(JSON.stringify(redactFact('assigned', assignment))).not.toContain('hunter2');
    expect(JSON.stringify(assignment)).toContain('hunter2');
    const status = { node: 'n1', tenure: 1, state: 'ready' as const, since: 0, reason: '' };
    expect(redactFact('nodeStatus', status)).toBe(status);
  });
});

describe('kindOfKey', () => {
  test("is parseKey's kind for every key of the layout and for malformed ones", () => {
    const keys: string[] = ['', '/', '//', '/nope/x', '/auth/', '/auth/other/x', 'nodes/n1'];
    for (const kind of Object.keys(layout) as KeyKind[]) {
      const { prefix, params } = layout[kind];
      const good = params.map((_, i) => `s${i}`);
      keys.push(
        prefix + good.join('/'),
        prefix,
        prefix + good.slice(1).join('/'), // a segment short
        prefix + [...good, 'extra'].join('/'), // one too many
        prefix + good.join('/') + '/', // a trailing empty segment
        prefix + ['', ...good.slice(1)].join('/'), // an empty one
        prefix + ['x'.repeat(254), ...good.slice(1)].join('/'), // too long
        prefix + ['x'.repeat(253), ...good.slice(1)].join('/'), // just right
        prefix + ['a\0b', ...good.slice(1)].join('/'),
        prefix.slice(0, -1) + 'x/' + good.join('/'), // another prefix that starts alike
      );
    }
    let matched = 0;
    for (const key of keys) {
      expect(kindOfKey(key), JSON.stringify(key)).toBe(parseKey(key)?.kind);
      if (kindOfKey(key)) matched++;
    }
    // Each kind's well-formed key and its longest allowed segment: the check is not vacuous.
    expect(matched).toBe(2 * Object.keys(layout).length);
  });
});
