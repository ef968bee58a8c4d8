import { describe, expect, it, test } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import type { TxnRequest, TxnResponse } from '../../db/store.js';
import { commitEach, commitWindow, utf8Bytes, writeBytes } from '../../jobs/write.js';
import { afterCommits, RETRY, retrySoon } from '../../jobs/retry.js';

describe('one write type, one retry policy', () => {
  test('commitEach commits each write alone and counts the ones that lost their race', async () => {
    const store = new MemoryStore({ now: () => 0 });
    await store.put('/a', '1');
    const failed = await commitEach(store, [
      { compares: [{ key: '/a', target: 'value', op: '=', value: '1' }], ops: [{ put: { key: '/b', value: 'x' } }] },
      { compares: [{ key: '/a', target: 'value', op: '=', value: '2' }], ops: [{ put: { key: '/c', value: 'y' } }] },
    ]);
    expect(failed).toBe(1);
    expect((await store.get('/b'))?.value).toBe('x');
    expect(await store.get('/c')).toBeNull();
  });

  test('a lost race runs the step again soon; none runs it not at all', () => {
    expect(retrySoon(1_000)).toEqual({ at: 1_000 + RETRY.conflictMs });
    expect(afterCommits(1_000, 2)).toEqual(retrySoon(1_000));
    expect(afterCommits(1_000, 0)).toEqual({});
  });
});

describe('utf8Bytes: the UTF-8 size of a string without encoding it', () => {
  const samples = ['', 'a', '/decisions/scheduler/svc0-00000001', JSON.stringify({ a: '"quoted" \\ \u0001' }), 'é', 'zoné-b', '日本', 'a😀b', '😀😀', `${'x'.repeat(1000)}ß`, `ß${'x'.repeat(1000)}`];
  it.each(samples)('counts %j as its encoding does', (s) => {
    expect(utf8Bytes(s)).toBe(new TextEncoder().encode(s).length);
  });

  it('sizes a write by its keys and values', () => {
    expect(writeBytes({ compares: [{ key: '/a', target: 'value', op: '=', value: 'é' }], ops: [{ put: { key: '/b', value: '日' } }, { delete: { key: '/c' } }] })).toBe(2 + 2 + 2 + 3 + 2);
  });
});

describe('commitWindow: txns built as they are taken', () => {
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  const turns = async (n: number) => {
    for (let i = 0; i < n; i++) await turn();
  };
  const put = (i: number): TxnRequest => ({ compare: [], success: [{ put: { key: `/k${i}`, value: 'v' } }] });

  /** A store whose txns settle when the test says so; it records what it was sent. */
  function heldStore() {
    const sent: string[] = [];
    const held: ((r: TxnResponse) => void)[] = [];
    const store = {
      txn: (t: TxnRequest) => {
        sent.push('put' in t.success[0]! ? t.success[0].put.key : '');
        return new Promise<TxnResponse>((resolve) => held.push(resolve));
      },
    };
    const settleAll = () => held.splice(0).forEach((resolve) => resolve({ succeeded: true, revision: 1, responses: [] }));
    return { store, sent, settleAll };
  }

  function counted(n: number) {
    const source = { built: 0 };
    function* txns() {
      for (let i = 0; i < n; i++) {
        source.built++;
        yield put(i);
      }
    }
    return { source, txns: txns() };
  }

  it('builds the next window while the one in flight is with the store, never more than a window ahead', async () => {
    const { store, sent, settleAll } = heldStore();
    const { source, txns } = counted(20);
    const done = commitWindow(store, txns, 4, turn);
    await turns(20);
    expect(sent).toEqual(['/k0', '/k1', '/k2', '/k3']);
    expect(source.built).toBe(8);
    settleAll();
    await turns(20);
    expect(sent).toHaveLength(8);
    expect(source.built).toBe(12);
    for (let i = 0; i < 10; i++) {
      settleAll();
      await turns(5);
    }
    expect(await done).toBe(0);
    expect(sent).toEqual(Array.from({ length: 20 }, (_, i) => `/k${i}`));
  });

  it('without a turn builds each txn only as it is taken', async () => {
    const { store, sent, settleAll } = heldStore();
    const { source, txns } = counted(6);
    const done = commitWindow(store, txns, 4);
    await turns(20);
    expect(source.built).toBe(4);
    settleAll();
    await turns(5);
    expect(sent).toHaveLength(6);
    settleAll();
    expect(await done).toBe(0);
  });

  it('a source that throws fails the window after its txns in flight settle, with nothing left unhandled', async () => {
    const { store, sent, settleAll } = heldStore();
    function* txns() {
      yield put(0);
      yield put(1);
      throw new Error('a bug while building');
    }
    let settled = false;
    const done = commitWindow(store, txns(), 2, turn).finally(() => (settled = true));
    await turns(20);
    expect(sent).toEqual(['/k0', '/k1']);
    expect(settled).toBe(false);
    settleAll();
    await expect(done).rejects.toThrow('a bug while building');
  });

  it('counts lost races in a lazily built window as in a listed one', async () => {
    const store = new MemoryStore({ now: () => 0 });
    await store.put('/a', '1');
    function* txns(): Generator<TxnRequest> {
      for (let i = 0; i < 10; i++) yield { compare: [{ key: '/a', target: 'value', op: '=', value: String(i % 2) }], success: [{ put: { key: `/k${i}`, value: 'x' } }] };
    }
    expect(await commitWindow(store, txns(), 3, turn)).toBe(5);
    expect((await store.range({ prefix: '/k' })).count).toBe(5);
  });
});
