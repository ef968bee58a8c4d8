import type { VolumeRecord } from '../core/model/index.js';
import type { AgentClient } from './client.js';
import { ServerError } from './core/errors.js';
import { VOLUME_SYNC_MS } from './core/volumes.js';

export interface VolumeFeedOptions {
  client: Pick<AgentClient, 'volumes' | 'credential'>;
  pollWaitMs: number;
  isClosed: () => boolean;
  sleep: (ms: number) => Promise<void>;
}

/**
 * The volumes the storage controller wants on this node, followed with a long poll: the core
 * syncs volumes every VOLUME_SYNC_MS, and asking the server each time was most of what 100
 * agents sent a pod (one request per agent every 2 s). The core now reads the last answer
 * (`current`); a change reaches it as soon as the long poll answers. Until the first answer
 * it asks the server itself.
 */
export class VolumeFeed {
  private list: VolumeRecord[] | undefined;

  constructor(private readonly opts: VolumeFeedOptions) {}

  /** The last answer, or undefined before the first. */
  current(): VolumeRecord[] | undefined {
    return this.list;
  }

  async loop(): Promise<void> {
    let after = 0;
    let backoff = 200;
    while (!this.opts.isClosed()) {
      if (this.opts.client.credential === '') {
        // Not enrolled yet, or the credential was dropped: what we had may be another tenure's.
        this.list = undefined;
        after = 0;
        await this.opts.sleep(100);
        continue;
      }
      try {
        const r = await this.opts.client.volumes(after, after === 0 ? 0 : this.opts.pollWaitMs);
        this.list = r.volumes;
        after = r.revision;
        backoff = 200;
        // A server from before the long poll answers at once, without `changed`: ask it at the old pace.
        if (r.changed === undefined) await this.opts.sleep(VOLUME_SYNC_MS);
      } catch (e) {
        // A server without the volume routes (an older version): the core says so once and stops asking; so do we.
        if (e instanceof ServerError && e.status === 404 && e.diagnostic.code === 'CCA-E0604') return;
        // The core's own calls report an unreachable server; keep the last answer meanwhile.
        await this.opts.sleep(backoff);
        backoff = Math.min(backoff * 2, 5_000);
      }
    }
  }
}
