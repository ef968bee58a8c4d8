import { describe, expect, it } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { MemoryStore } from '../../db/memory.js';
import type { RangeRequest, RangeResponse } from '../../db/store.js';
import { listFacts, readFacts } from '../../jobs/facts.js';

const status = (node: string) => encodeFact('nodeStatus', { node, tenure: 1, state: 'ready', since: 0 });

/** A store holding `n` node statuses (more than one page), plus a key of another kind under a shared prefix. */
async function filled(n: number): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (let i = 0; i < n; i++) await store.put(buildKey('nodeStatus', `n${String(i).padStart(5, '0')}`), status(`n${i}`));
  return store;
}

describe('the read layer (jobs/facts.ts)', () => {
  it('pages through every fact of a kind, and all pages read one revision', async () => {
    const store = await filled(4_500);
    const at = await store.revision();
    // After each page, another writer adds a fact: a read pinned to the first page's revision never sees them.
    const range = store.range.bind(store);
    let pages = 0;
    store.range = async (r: RangeRequest): Promise<RangeResponse> => {
      const out = await range(r);
      pages++;
      await store.put(buildKey('nodeStatus', `z${pages}`), status(`z${pages}`));
      return out;
    };
    const read = await readFacts(store, 'nodeStatus');
    expect(pages).toBe(3);
    expect(read.revision).toBe(at);
    expect(read.facts).toHaveLength(4_500);
    expect(new Set(read.facts.map((f) => f.key)).size).toBe(4_500);
    expect(read.facts.every((f) => f.kv.modRevision <= at && f.value.state === 'ready')).toBe(true);
  });

  it('reads under leading segments or a raw prefix, at a past revision, decoding only its own kind', async () => {
    const store = await filled(3);
    const past = await store.revision();
    await store.put(buildKey('nodeStatus', 'later'), status('later'));
    await store.put(buildKey('node', 'n00001'), '{}'); // another kind: never decoded as a status (it would not parse)
    const lost = (node: string, replica: string) => encodeFact('lost', { replica, service: 's', node, tenure: 1, at: 0, proof: 'lease-expired' });
    await store.put(buildKey('lost', 'a', 'r1'), lost('a', 'r1'));
    await store.put(buildKey('lost', 'ab', 'r2'), lost('ab', 'r2')); // `/lost/ab/` is not under `/lost/a/`
    expect((await readFacts(store, 'lost', ['a'])).facts.map((f) => f.value.replica)).toEqual(['r1']);
    expect((await readFacts(store, 'nodeStatus', [], past)).facts.map((f) => f.value.node)).toEqual(['n0', 'n1', 'n2']);
    expect((await readFacts(store, 'nodeStatus', [], past)).revision).toBe(past);
    expect((await listFacts(store, 'nodeStatus', '/node')).map((f) => f.value.node)).toEqual(['later', 'n0', 'n1', 'n2']);
  });
});
