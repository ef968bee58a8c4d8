/**
 * Requests this pod is still handling. A pod that stops closes its store only once they are
 * done (or a bound passed): a handler that outlived its connection must not meet a closed
 * store (CCA-E0113).
 */
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  get size(): number {
    return this.count;
  }

  /** Run one request's handling, counted. */
  async track<T>(f: () => Promise<T>): Promise<T> {
    this.count++;
    try {
      return await f();
    } finally {
      this.count--;
      if (this.count === 0) for (const w of this.waiters.splice(0)) w();
    }
  }

  /** Resolves true once nothing is in flight, false when `boundMs` passed first. */
  idle(boundMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), boundMs);
      timer.unref();
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
