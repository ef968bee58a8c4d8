import type { Store, WatchBatch } from '../../db/store.js';
import type { Frame } from './frame-cache.js';
import type { FrameLine, LineStop } from './frame-line.js';

/** What a feed keeps of its newest frames, so a watcher a little behind it can join: count and bytes, per feed. */
export interface FeedLimits {
  frames: number;
  bytes: number;
}

/** The newest frames a prefix's feed keeps, so a watcher just behind it can join at once. */
export const FEED_KEEPS: FeedLimits = { frames: 64, bytes: 1024 * 1024 };

/** One watch of a view (prefix and prevKv) in this pod. */
export interface View {
  prefix: string;
  prevKv: boolean;
}

type Deliver = (f: Frame) => void;

/**
 * The frames of one view, from one store watch, handed to every watcher of the view that is
 * at the head (etcd's synced watchers). Watchers that are behind, or were held back at a
 * bound, pull on their own until they reach what the feed still keeps, then join it: so a
 * thousand watchers of one prefix cost one pull and one frame per revision, and a slow one
 * still never holds the others back.
 */
class Feed {
  /** Every frame this feed has handed out with revision ≥ `covers` is in `kept`, in order. */
  covers: number;
  private readonly kept: Frame[] = [];
  private keptBytes = 0;
  private readonly subs = new Set<Deliver>();
  private readonly endings = new Set<() => void>();
  private readonly ac = new AbortController();
  ended = false;

  constructor(
    store: Store,
    view: View,
    start: number,
    frame: (b: WatchBatch) => Frame,
    private readonly limits: FeedLimits,
  ) {
    this.covers = start;
    void this.follow(store.watch({ prefix: view.prefix, prevKv: view.prevKv, fromRevision: start, signal: this.ac.signal }), frame);
  }

  private async follow(batches: AsyncIterable<WatchBatch>, frame: (b: WatchBatch) => Frame): Promise<void> {
    try {
      for await (const b of batches) {
        const f = frame(b);
        this.keep(f);
        for (const deliver of this.subs) deliver(f);
      }
    } catch {
      // Whatever ended the feed (a compacted start, a closed store) each watcher meets again
      // on its own watch, from its own position, and reports with its own request ID.
    } finally {
      this.ended = true;
      this.subs.clear();
      const endings = [...this.endings];
      this.endings.clear();
      for (const e of endings) e();
    }
  }

  private keep(f: Frame): void {
    this.kept.push(f);
    this.keptBytes += f.bytes;
    while (this.kept.length > this.limits.frames || (this.keptBytes > this.limits.bytes && this.kept.length > 0)) {
      const old = this.kept.shift()!;
      this.keptBytes -= old.bytes;
      this.covers = old.revision + 1;
    }
  }

  canJoin(position: number): boolean {
    return !this.ended && position >= this.covers;
  }

  /**
   * Hands `deliver` the kept frames from `position` on, then every frame the feed makes,
   * until leave() or the feed ends (then `onEnd`). Synchronous, so nothing falls between.
   */
  join(position: number, deliver: Deliver, onEnd: () => void): { leave(): void } {
    const leave = () => {
      this.subs.delete(deliver);
      this.endings.delete(onEnd);
    };
    for (const f of this.kept) if (f.revision >= position) deliver(f);
    this.subs.add(deliver);
    this.endings.add(onEnd);
    return { leave };
  }

  stop(): void {
    this.ac.abort();
  }

  /** Watchers joined now (tests, metrics). */
  joined(): number {
    return this.subs.size;
  }
}

/**
 * The pod's feeds, one per view being watched; a view's feed stops when its last watcher goes.
 * A feed always starts at the newest revision this pod has seen, never where a watcher asked:
 * a watcher from long ago (or from the future) must not make the watchers at the head wait
 * while the feed reads history. Such a watcher pulls on its own and joins when it can.
 */
export class SharedFeeds {
  private readonly views = new Map<string, { users: number; feed?: Feed }>();
  /** The newest revision this pod knows to be committed: from the store when a watch starts, and from every frame. */
  private head = 0;

  constructor(
    private readonly store: Store,
    private readonly frame: (b: WatchBatch, view: View) => Frame,
    private readonly limits: FeedLimits,
  ) {}

  /**
   * A watcher's line: `position` is the first revision it wants; `head` the store's revision,
   * read when the watch started (for "from now", position is head + 1; both read before the
   * watcher is told it is watching).
   */
  line(view: View, position: number, head: number): FrameLine {
    this.saw(head);
    const key = `${view.prevKv ? 1 : 0}${view.prefix}`;
    let entry = this.views.get(key);
    if (!entry) this.views.set(key, (entry = { users: 0 }));
    entry.users++;
    return new SharedLine(this, this.store, view, key, position, (b) => this.frame(b, view));
  }

  saw(revision: number): void {
    if (revision > this.head) this.head = revision;
  }

  /** The view's live feed, started after the newest revision seen if it has none. */
  feedFor(key: string, view: View): Feed {
    const entry = this.views.get(key)!;
    if (!entry.feed || entry.feed.ended) {
      entry.feed = new Feed(this.store, view, this.head + 1, (b) => {
        this.saw(b.revision);
        return this.frame(b, view);
      }, this.limits);
    }
    return entry.feed;
  }

  release(key: string): void {
    const entry = this.views.get(key);
    if (!entry || --entry.users > 0) return;
    entry.feed?.stop();
    this.views.delete(key);
  }

  /** Views with a feed, and watchers joined to feeds (tests, metrics). */
  stats(): { feeds: number; joined: number } {
    let feeds = 0;
    let joined = 0;
    for (const { feed } of this.views.values()) {
      if (!feed || feed.ended) continue;
      feeds++;
      joined += feed.joined();
    }
    return { feeds, joined };
  }
}

/** What stopped a watcher's turn on a feed or on its own watch, short of a LineStop. */
type Handover = 'rejoin';

/**
 * One watcher: joined to its view's feed when it can be, pulling on its own (from its exact
 * position) when it is behind what the feed keeps or the feed has ended.
 */
class SharedLine implements FrameLine {
  private closed = false;

  constructor(
    private readonly feeds: SharedFeeds,
    private readonly store: Store,
    private readonly view: View,
    private readonly key: string,
    /** The first revision not yet handed to the pump. */
    private position: number,
    private readonly frame: (b: WatchBatch) => Frame,
  ) {}

  async run(push: (f: Frame) => boolean, signal: AbortSignal): Promise<LineStop> {
    // After a feed ended under it, a watcher takes one turn on its own watch: whatever ended
    // the feed (a compacted start, a closed store) then ends this watcher with its own error,
    // instead of the watcher starting feed after doomed feed.
    let fedLast = false;
    for (;;) {
      if (signal.aborted || this.closed) return 'aborted';
      const feed = this.feeds.feedFor(this.key, this.view);
      const joinFeed: boolean = !fedLast && feed.canJoin(this.position);
      const stop = joinFeed ? await this.onFeed(feed, push, signal) : await this.onOwn(feed, push, signal);
      if (stop !== 'rejoin') return stop;
      fedLast = joinFeed;
    }
  }

  /** Joined until the pump says stop, the signal aborts, or the feed ends ('rejoin'). */
  private onFeed(feed: Feed, push: (f: Frame) => boolean, signal: AbortSignal): Promise<LineStop | Handover> {
    return new Promise((resolve) => {
      let done = false;
      let sub: { leave(): void } | undefined;
      const finish = (how: LineStop | Handover) => {
        if (done) return;
        done = true;
        sub?.leave();
        signal.removeEventListener('abort', aborted);
        resolve(how);
      };
      const aborted = () => finish('aborted');
      signal.addEventListener('abort', aborted, { once: true });
      const deliver = (f: Frame) => {
        if (done || f.revision < this.position) return;
        this.position = f.revision + 1;
        if (!push(f)) finish('paused');
      };
      sub = feed.join(this.position, deliver, () => finish('rejoin'));
      // The kept frames may already have brought the watcher to its bound.
      if (done) sub.leave();
    });
  }

  /**
   * Pulls from its own position until the pump says stop, or it reaches what the feed keeps.
   * It can tell only when it gets a frame: a watcher behind on a quiet prefix stays on its own.
   */
  private async onOwn(feed: Feed, push: (f: Frame) => boolean, signal: AbortSignal): Promise<LineStop | Handover> {
    const own = new AbortController();
    const stop = () => own.abort();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const b of this.store.watch({ prefix: this.view.prefix, prevKv: this.view.prevKv, fromRevision: this.position, signal: own.signal })) {
        const f = this.frame(b);
        this.feeds.saw(f.revision);
        this.position = f.revision + 1;
        if (!push(f)) return 'paused';
        if (feed.ended || feed.canJoin(this.position)) return 'rejoin';
      }
      return signal.aborted || this.closed ? 'aborted' : 'ended';
    } finally {
      own.abort();
      signal.removeEventListener('abort', stop);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.feeds.release(this.key);
  }
}
