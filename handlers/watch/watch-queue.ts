import type { Frame } from './frame-cache.js';

/** The bytes every watcher of this pod has waiting, against the pod's bound. */
export class PodBytes {
  used = 0;
  constructor(readonly limit: number) {}
}

/** Which bound a watcher is at. */
export type Bound = 'watcher' | 'pod';

/**
 * One watcher's frames between the store and its socket, counted in bytes: those queued
 * here and those handed to the socket whose write has not completed. The producer stops
 * pulling from the store while the watcher is at a bound (so memory stays bounded whatever
 * the client does); a watcher that stays there without sending anything is cut.
 */
export class WatchQueue {
  private frames: Frame[] = [];
  private queued = 0;
  private inFlight = 0;
  private lastHanded = 0;
  private closed = false;

  constructor(
    private readonly pod: PodBytes,
    private readonly limitBytes: number,
  ) {}

  push(f: Frame): void {
    this.frames.push(f);
    this.queued += f.bytes;
    this.pod.used += f.bytes;
  }

  /** Bytes this watcher holds (queued and in flight). */
  bytes(): number {
    return this.queued + this.inFlight;
  }

  /** Frames queued and not yet handed to the socket. */
  waiting(): number {
    return this.frames.length;
  }

  idle(): boolean {
    return this.bytes() === 0;
  }

  /**
   * The bound this watcher is at, if any. The pod's bound stops only a watcher that already
   * holds something: an empty one may always take one frame, so every watcher progresses.
   */
  over(): Bound | undefined {
    const own = this.bytes();
    if (own >= this.limitBytes) return 'watcher';
    if (own > 0 && this.pod.used >= this.pod.limit) return 'pod';
    return undefined;
  }

  /** Frames to hand to the socket in one write: up to `maxBytes`, at least one. */
  take(maxBytes: number): { text: string; bytes: number } | undefined {
    if (this.frames.length === 0) return undefined;
    let n = 0;
    let bytes = 0;
    while (n < this.frames.length && (n === 0 || bytes + this.frames[n]!.bytes <= maxBytes)) bytes += this.frames[n++]!.bytes;
    const out = this.frames.splice(0, n);
    this.queued -= bytes;
    this.inFlight += bytes;
    this.lastHanded = out.at(-1)!.revision;
    return { text: out.map((f) => f.text).join(''), bytes };
  }

  /** A write handed out by take() completed. */
  written(bytes: number): void {
    if (this.closed) return;
    this.inFlight -= bytes;
    this.pod.used -= bytes;
  }

  /** The first revision not handed to the socket: where a cut watcher resumes. */
  resumeFrom(): number {
    return this.frames[0]?.revision ?? this.lastHanded + 1;
  }

  /** Forget the frames not handed out (a cut). */
  drop(): void {
    this.pod.used -= this.queued;
    this.queued = 0;
    this.frames = [];
  }

  /** The watcher is gone: give back everything, in flight included. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.drop();
    this.pod.used -= this.inFlight;
    this.inFlight = 0;
  }
}
