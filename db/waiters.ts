/**
 * Watchers parked until the head moves. A store calls `wake()` whenever its head
 * advances (or it closes); each waiter re-checks its own condition.
 */
export class HeadWaiters {
  private waiters = new Set<() => void>();

  /** Resolves once `ready()` holds at a wake, or the signal aborts. */
  wait(ready: () => boolean, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (ready() || signal.aborted) return resolve();
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  wake(): void {
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }
}
