import { describe, expect, it } from 'vitest';
// @ts-expect-error plain ES module of the console, no types
import { formatFilter, formatHash, isEmpty, matches, parseFilter, parseHash, passes } from '../../web/filter.js';

describe('the console filter', () => {
  it('parses free words and qualifiers, and formats back', () => {
    const f = parseFilter('  Web node:Node3 state:running svc:api replica:API-1 extra ');
    expect(f).toEqual({ text: 'web extra', service: 'api', node: 'node3', replica: 'api-1', state: 'running' });
    expect(formatFilter(f)).toBe('web extra service:api node:node3 replica:api-1 state:running');
    expect(parseFilter(formatFilter(f))).toEqual(f);
    expect(isEmpty(parseFilter(''))).toBe(true);
    expect(parseFilter('node:').text).toBe('node:'); // a qualifier with no value is a word
  });

  it('a qualifier must equal its field; words appear in any field', () => {
    const chip = { service: 'web', node: 'node3', replica: 'web-abc', state: 'running', zone: 'b' };
    expect(matches(parseFilter(''), chip)).toBe(true);
    expect(matches(parseFilter('service:web'), chip)).toBe(true);
    expect(matches(parseFilter('service:we'), chip)).toBe(false);
    expect(matches(parseFilter('we abc'), chip)).toBe(true);
    expect(matches(parseFilter('we xyz'), chip)).toBe(false);
    expect(matches(parseFilter('node:node3 state:running'), chip)).toBe(true);
    expect(matches(parseFilter('state:pending'), chip)).toBe(false);
    expect(matches(parseFilter('service:web'), { node: 'node3' })).toBe(false);
    expect(matches(parseFilter('replica:web-abc'), chip)).toBe(true);
    expect(matches(parseFilter('replica:web-ab'), chip)).toBe(false);
  });

  it('a thing of several subjects (a timeline entry) passes if one of them equals the qualifier', () => {
    const entry = { services: ['web'], nodes: ['node1', 'node2'], replicas: ['web-1'], state: '', text: 'placed on node2 fits' };
    expect(passes(parseFilter(''), entry)).toBe(true);
    expect(passes(parseFilter('node:node2'), entry)).toBe(true);
    expect(passes(parseFilter('node:node3'), entry)).toBe(false);
    expect(passes(parseFilter('replica:web-1 service:web'), entry)).toBe(true);
    expect(passes(parseFilter('replica:web-2'), entry)).toBe(false);
    expect(passes(parseFilter('state:running'), entry)).toBe(false);
    expect(passes(parseFilter('fits placed'), entry)).toBe(true);
    expect(passes(parseFilter('fits evicted'), entry)).toBe(false);
  });

  it('the hash names the view, its arguments and the filter', () => {
    expect(parseHash('#map?q=service%3Aweb+node%3An1')).toEqual({ view: 'map', args: [], q: 'service:web node:n1' });
    expect(parseHash('#/map?q=web')).toEqual({ view: 'map', args: [], q: 'web' });
    expect(parseHash('#why/replica/web-1')).toEqual({ view: 'why', args: ['replica', 'web-1'], q: '' });
    expect(parseHash('')).toEqual({ view: '', args: [], q: '' });
    // Older links, one parameter per field (the history views' first scheme), read as the filter.
    expect(parseHash('#timeline?replica=web-1')).toEqual({ view: 'timeline', args: [], q: 'replica:web-1' });
    expect(parseHash('#timeline?node=node1&text=lost')).toEqual({ view: 'timeline', args: [], q: 'lost node:node1' });
    const h = formatHash({ view: 'why', args: ['replica', 'a b'], q: 'state:running x' });
    expect(parseHash(h)).toEqual({ view: 'why', args: ['replica', 'a b'], q: 'state:running x' });
  });
});
