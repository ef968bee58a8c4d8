/**
 * One timer for every watcher of a pod: a writer with frames waits for the next tick, so the
 * frames that arrive meanwhile go out in the same socket write: each write (a syscall, and
 * on loopback the reader's side of it too) is the pod's largest cost per event. A tick adds
 * at most `ms` to commit → event; 0 writes at once. 10 ms by default: with 1,000 watchers at
 * 100 revisions a second, 5 ms cost more CPU and had a worse tail, 20 ms saved a little CPU
 * and added its 10 ms to every event (docs/benchmarks.md).
 */
export class FlushTick {
  private pending: Promise<void> | undefined;

  constructor(private readonly ms: number) {}

  next(): Promise<void> {
    if (this.ms <= 0) return Promise.resolve();
    return (this.pending ??= new Promise<void>((resolve) =>
      setTimeout(() => {
        this.pending = undefined;
        resolve();
      }, this.ms),
    ));
  }
}
