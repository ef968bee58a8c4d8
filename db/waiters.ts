/**
 * Watchers parked until the head moves. A store calls `wake()` whenever its head
 * advances (or it closes); each waiter re-checks its own condition.
 *
 * A watch waits once per revision it follows, so a thousand watchers at 100 revisions a
 * second wait 100,000 times a second: each signal gets one abort listener for its whole
 * life (not one added and removed per wait — EventTarget's bookkeeping was a measurable
 * part of the pod's cost per event), which ends whatever wait is current.
 */
export class HeadWaiters {
  private waiters = new Set<() => void>();
  private readonly parked = new WeakMap<AbortSignal, { current?: () => void }>();

  /** Resolves once `ready()` holds at a wake, or the signal aborts. */
  wait(ready: () => boolean, signal: AbortSignal): Promise<void> {
    if (ready() || signal.aborted) return Promise.resolve();
    const slot = this.slotOf(signal);
    return new Promise<void>((resolve) => {
      slot.current = resolve;
      this.waiters.add(resolve);
    });
  }

  wake(): void {
    const ws = this.waiters;
    this.waiters = new Set();
    for (const w of ws) w();
  }

  private slotOf(signal: AbortSignal): { current?: () => void } {
    let slot = this.parked.get(signal);
    if (!slot) {
      const s: { current?: () => void } = {};
      signal.addEventListener(
        'abort',
        () => {
          const w = s.current;
          if (!w) return;
          s.current = undefined;
          this.waiters.delete(w);
          w();
        },
        { once: true },
      );
      this.parked.set(signal, s);
      slot = s;
    }
    return slot;
  }
}
