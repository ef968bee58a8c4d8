import type pg from 'pg';
import type { Db } from './sql/db.js';

/**
 * The store's read connections, shared by two lanes: every connection serves either, and
 * when they are all busy a person's read (the interactive lane) takes the next one that
 * frees before any background read (controllers, agents) that was waiting. Nothing is
 * reserved, so the background loses no connection while people are idle, and a person's
 * read never waits behind a busy pod's hundreds of queued reads, only for the first
 * connection to come free. Every read is one statement (sql/), so the gate is a counter
 * and two queues in front of the pool: the pool itself never has to queue.
 */
export class LanedReads {
  private busy = 0;
  private readonly waiting: { interactive: (() => void)[]; background: (() => void)[] } = { interactive: [], background: [] };

  /** `waited`: each read's wait for a connection, gate and connect (cca_store_pool_wait_seconds). */
  constructor(
    private readonly pool: pg.Pool,
    private readonly size: number,
    private readonly waited?: (seconds: number) => void,
  ) {}

  /** A `Db` whose statements run in `lane`. */
  lane(lane: 'interactive' | 'background'): Db {
    return {
      // any: pg's own default row type; callers name theirs (Db's signature).
      query: <R extends pg.QueryResultRow = any>(text: string | pg.QueryConfig, values?: unknown[]) => this.run<R>(lane, text, values),
    };
  }

  /**
   * A connection of the pool for several statements (a person's write batch), taken as a
   * read in `lane` would take it; its `release` hands it on to the next waiter.
   */
  async checkout(lane: 'interactive' | 'background'): Promise<pg.PoolClient> {
    const started = performance.now();
    if (this.busy < this.size) this.busy++;
    else await new Promise<void>((resolve) => this.waiting[lane].push(resolve));
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      this.handOn();
      throw e;
    }
    this.waited?.((performance.now() - started) / 1000);
    const release = client.release.bind(client);
    // pg-pool sets `release` afresh at every checkout; a second release throws there, before
    // the gate could be handed on twice.
    client.release = (err?: Error | boolean) => {
      release(err);
      this.handOn();
    };
    return client;
  }

  /** Reads waiting for a connection, per lane (tests, metrics). */
  queued(): { interactive: number; background: number } {
    return { interactive: this.waiting.interactive.length, background: this.waiting.background.length };
  }

  private async run<R extends pg.QueryResultRow>(lane: 'interactive' | 'background', text: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>> {
    const client = await this.checkout(lane);
    try {
      const r = await client.query<R>(text, values);
      client.release();
      return r;
    } catch (e) {
      // As pg-pool's own query does: a client whose statement failed is not reused.
      client.release(e instanceof Error ? e : true);
      throw e;
    }
  }

  /** A connection came free: to the oldest interactive waiter, else the oldest background one. */
  private handOn(): void {
    const next = this.waiting.interactive.shift() ?? this.waiting.background.shift();
    if (next) next();
    else this.busy--;
  }
}
