import { describe, expect, it } from 'vitest';
import { CcaError } from '../../core/diagnostics/error.js';
import type { Diagnostic } from '../../core/diagnostics/types.js';
import type { Controller } from '../../jobs/controller.js';
import { runStep, StepBook, stepFailure } from '../../jobs/step-runner.js';
import { MemoryStore } from '../../db/memory.js';

const half = () => 0.5; // backoff jitter factor exactly 1

const throwing = (e: unknown): Controller => ({
  name: 'c',
  watches: [],
  reconcile: async () => {
    throw e;
  },
});

describe('StepBook: what every driver does after a step', () => {
  it('reports a store outage once, re-arms on recovery, and backs off per step', async () => {
    const reports: Diagnostic[] = [];
    let recovered = 0;
    const book = new StepBook((d) => reports.push(d), { onRecovered: () => recovered++ });
    const store = new MemoryStore();
    const down = await runStep(throwing(new CcaError('CCA-E0111', { backend: 'postgres', reason: 'refused', target: 'db' })), store, 0, half, undefined);
    expect(down).toMatchObject({ ok: false, storeDown: true });

    expect(book.settle('c', down, 1_000, half)).toBe(1_100);
    expect(book.settle('c', down, 1_000, half)).toBe(1_200);
    book.storeFailed('the watch failed');
    expect(book.settle('d', down, 1_000, half)).toBe(1_100); // each step has its own count
    expect(reports.map((d) => d.code)).toEqual(['CCA-E0403']);

    expect(book.settle('c', { ok: true, wake: { at: 7 }, writes: 0 }, 2_000, half)).toBe(7);
    expect(book.settle('c', { ok: true, wake: {}, writes: 0 }, 2_000, half)).toBeUndefined();
    expect(recovered).toBe(1);
    expect(book.settle('c', down, 3_000, half)).toBe(3_100); // the count restarted
    expect(reports.map((d) => d.code)).toEqual(['CCA-E0403', 'CCA-E0403']); // a second outage, a second report
  });

  it("reports a step's bug once per distinct message (CCA-E0404), never as a store outage", async () => {
    const reports: Diagnostic[] = [];
    const book = new StepBook((d) => reports.push(d));
    const store = new MemoryStore();
    for (const msg of ['boom', 'boom', 'bang']) book.settle('c', await runStep(throwing(new Error(msg)), store, 0, half, undefined), 0, half);
    expect(reports.map((d) => `${d.code} ${d.message}`)).toEqual(['CCA-E0404 the c step failed unexpectedly: boom', 'CCA-E0404 the c step failed unexpectedly: bang']);
    expect(stepFailure(throwing(0), new Error('x')).storeDown).toBe(false);
  });
});

describe('runStep counts the writes a step commits', () => {
  it('a succeeded txn and a put count, a failed compare does not', async () => {
    const store = new MemoryStore();
    const writer: Controller = {
      name: 'w',
      watches: [],
      reconcile: async ({ store: s }) => {
        await s.put('/a', 'x');
        await s.txn({ compare: [{ key: '/a', target: 'value', op: '=', value: 'x' }], success: [{ put: { key: '/b', value: 'y' } }], failure: [] });
        await s.txn({ compare: [{ key: '/a', target: 'value', op: '=', value: 'nope' }], success: [{ put: { key: '/c', value: 'z' } }], failure: [] });
        return {};
      },
    };
    expect(await runStep(writer, store, 0, half, undefined)).toEqual({ ok: true, wake: {}, writes: 2 });
    const idle: Controller = { name: 'i', watches: [], reconcile: async ({ store: s }) => (await s.get('/a'), {}) };
    expect(await runStep(idle, store, 0, half, undefined)).toEqual({ ok: true, wake: {}, writes: 0 });
  });
});
