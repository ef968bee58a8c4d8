import { expect, test } from 'vitest';
import { waitFor, WaitTimeout } from './wait.js';

test('waitFor returns the first value that is not undefined, null or false', async () => {
  const seq = [undefined, null, false, 'ready'];
  expect(await waitFor('the fourth probe', () => seq.shift(), { everyMs: 1 })).toBe('ready');
});

test('with a predicate it returns the probe value the predicate accepts', async () => {
  let n = 0;
  expect(await waitFor('three polls', () => ++n, (v) => v === 3, { everyMs: 1 })).toBe(3);
});

test('a timeout names what was awaited and the last value seen', async () => {
  const e = await waitFor('web at 3 running', () => ({ running: 2 }), (v) => v.running === 3, { timeoutMs: 20, everyMs: 5 }).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(WaitTimeout);
  expect((e as Error).message).toBe('timed out after 20 ms waiting for web at 3 running; last seen: {"running":2}');
});

test('a probe that throws fails the wait at once, unless errors are retried (then the last one is named)', async () => {
  const boom = () => {
    throw new Error('connection refused');
  };
  await expect(waitFor('the server', boom, { timeoutMs: 60_000 })).rejects.toThrow('connection refused');
  await expect(waitFor('the server', boom, { timeoutMs: 20, everyMs: 5, retryErrors: true })).rejects.toThrow(
    'timed out after 20 ms waiting for the server; the last probe failed: connection refused',
  );
});

test('a probe that never answers does not hold the wait past its deadline', async () => {
  // Without the deadline this never returns: the test's own timeout fails it.
  const e = await waitFor('the pod', () => new Promise<boolean>(() => undefined), { timeoutMs: 20, retryErrors: true }).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(WaitTimeout);
  expect((e as Error).message).toBe('timed out after 20 ms waiting for the pod; the last probe failed: the probe itself had not answered a second after the deadline');
});
