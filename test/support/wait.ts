/**
 * The one wait of the test suite: poll a probe until it yields, or fail naming what was
 * awaited, after how long, and the last value (or error) seen.
 *
 *   await waitFor('3 running', () => running().then((r) => r.length === 3 ? r : undefined));
 *   await waitFor('3 running', running, (r) => r.length === 3, { timeoutMs: 30_000 });
 *
 * Without a predicate the probe's `undefined`, `null` or `false` means "not yet"; with one, the
 * probe's value is returned once the predicate holds. A probe that throws fails the wait at
 * once, unless `retryErrors` (a server that is still starting): then the error counts as
 * "not yet" and is named if the wait times out.
 */
export interface WaitOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Poll this often (default 50 ms). */
  everyMs?: number;
  /** A probe that throws has not yielded yet (default: the error fails the wait). */
  retryErrors?: boolean;
}

/** A wait that ran out of time; `last` is the last value the probe gave (evidence). */
export class WaitTimeout extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly last: unknown,
    readonly lastError: unknown,
  ) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}${describe(last, lastError)}`);
    this.name = 'WaitTimeout';
  }
}

type Awaitable<T> = T | Promise<T>;

export function waitFor<T>(what: string, probe: () => Awaitable<T>, until: (v: T) => boolean, opts?: number | WaitOptions): Promise<T>;
export function waitFor<T>(what: string, probe: () => Awaitable<T | undefined | null | false>, opts?: number | WaitOptions): Promise<T>;
export async function waitFor<T>(
  what: string,
  probe: () => Awaitable<T | undefined | null | false>,
  untilOrOpts?: ((v: T) => boolean) | number | WaitOptions,
  maybeOpts?: number | WaitOptions,
): Promise<T> {
  const until = typeof untilOrOpts === 'function' ? untilOrOpts : undefined;
  const raw = typeof untilOrOpts === 'function' ? maybeOpts : untilOrOpts;
  const opts: WaitOptions = typeof raw === 'number' ? { timeoutMs: raw } : (raw ?? {});
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await beforeDeadline(probe(), deadline);
      last = v;
      lastError = undefined;
      if (until ? until(v as T) : v !== undefined && v !== null && v !== false) return v as T;
    } catch (e) {
      if (e instanceof ProbeHung) throw new WaitTimeout(what, timeoutMs, last, e);
      if (!opts.retryErrors) throw e;
      lastError = e;
    }
    if (Date.now() > deadline) throw new WaitTimeout(what, timeoutMs, last, lastError);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 50));
  }
}

/**
 * A probe that never settles (a request to a process that accepts and never answers) must not
 * hold the wait past its deadline: a second after it, the wait fails as a timeout that says so.
 */
class ProbeHung extends Error {
  constructor() {
    super('the probe itself had not answered a second after the deadline');
  }
}

async function beforeDeadline<T>(v: Awaitable<T>, deadline: number): Promise<T> {
  if (!(v instanceof Promise)) return v;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeHung()), Math.max(0, deadline - Date.now()) + 1_000);
  });
  try {
    return await Promise.race([v, hung]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(last: unknown, lastError: unknown): string {
  if (lastError !== undefined) return `; the last probe failed: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
  if (last === undefined || last === null || last === false) return '';
  let text: string;
  try {
    text = typeof last === 'string' ? last : JSON.stringify(last);
  } catch {
    text = String(last);
  }
  return `; last seen: ${text.length > 2_000 ? `${text.slice(0, 2_000)}…` : text}`;
}
