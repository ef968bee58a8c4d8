/**
 * One timer for every watcher of a pod: a writer with frames waits for the next tick, so the
 * frames that arrive meanwhile go out in the same socket write. At 100 revisions a second a
 * 20 ms tick writes about two frames per call instead of one, for every watcher, and each
 * write (a syscall, and on loopback the reader's side of it too) was the pod's largest cost
 * per event. A tick adds at most `ms` to commit → event; 0 writes at once.
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
