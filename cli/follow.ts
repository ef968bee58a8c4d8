import type { Context } from './context.js';

export interface FollowOptions {
  /** First revision to watch from (the revision the first picture was read at, plus one). */
  from: number;
  /** Only changes under this prefix wake a refresh (default: every change). */
  prefix?: string;
  /** Re-read and redraw; return true when there is nothing more to wait for. */
  refresh(): Promise<boolean>;
  /** Batches closer together than this cause one refresh. */
  debounceMs?: number;
  /** Ends the follow quietly (Ctrl-C, a timeout). */
  signal: AbortSignal;
}

/**
 * Follow the store's watch and call `refresh` after changes, until it says done or the
 * signal aborts. The watch only says *that* something changed; the picture is always
 * re-read whole through the API, so a missed detail cannot leave it wrong.
 */
export async function follow(ctx: Context, opts: FollowOptions): Promise<void> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  // A signal that is already aborted never fires 'abort' again.
  if (opts.signal.aborted) return;
  opts.signal.addEventListener('abort', onAbort, { once: true });
  let dirty = false;
  let wake: (() => void) | undefined;
  const watching = (async () => {
    for await (const _batch of ctx.client().watch(opts.prefix ?? '', opts.from, stop.signal)) {
      dirty = true;
      wake?.();
    }
  })();
  watching.catch(() => undefined);
  const stopped = new Promise<void>((resolve) => (stop.signal.aborted ? resolve() : stop.signal.addEventListener('abort', () => resolve(), { once: true })));
  try {
    for (;;) {
      if (!dirty) {
        const woke = new Promise<void>((resolve) => (wake = resolve));
        await Promise.race([woke, stopped, watching]);
      }
      if (stop.signal.aborted) return;
      await new Promise((r) => setTimeout(r, opts.debounceMs ?? 100));
      dirty = false;
      try {
        if (await opts.refresh()) return;
      } catch (e) {
        // A refresh cut short by the interrupt is not a failure of the command.
        if (stop.signal.aborted) return;
        throw e;
      }
    }
  } finally {
    opts.signal.removeEventListener('abort', onAbort);
    stop.abort();
    // A watch that failed (not one we stopped) is the command's error.
    await watching;
  }
}
