import type { BucketPolicy } from '../core/limits/token-bucket.js';
import type { Store } from '../db/store.js';
import type { RequestLog } from './access-log.js';
import type { AuthPolicy } from './auth.js';
import type { InFlight } from './inflight.js';
import type { Cidr } from '../core/model/peer-address.js';
import type { ServerMetrics } from './metrics.js';
import type { SecretBox } from './secret-box.js';

export interface ServerLimits {
  /** Largest request body accepted. */
  maxBodyBytes: number;
  /** How long an agent's long poll waits for a change before answering "nothing new". */
  longPollMs: number;
  /** Comment lines on idle watch streams keep proxies from closing them. */
  heartbeatMs: number;
  /** A fact query refuses a prefix holding more keys than this (CCA-E0691): it would scan them all on every page. */
  queryScanKeys: number;
  /** Bytes of frames one watcher may have waiting in this pod (beyond its socket) before it must drain or be cut (CCA-E0640). */
  watchQueueBytes: number;
  /** Bytes of frames all the watchers of this pod may have waiting together (CCA-E0641). */
  watchPodBytes: number;
  /** How long a watcher at its bound may send nothing before it is cut. */
  watchStallMs: number;
  /** How long a cut watcher's connection is kept for the event that says where to resume, before it is closed. */
  watchCutGraceMs: number;
  /** Frames reaching a watcher within this many ms go out in one socket write (handlers/watch/flush-tick.ts); 0: each at once. */
  watchFlushMs: number;
  /** Bytes of serialised frames kept for watchers of the same prefix to share. */
  frameCacheBytes: number;
  /** Watch streams and long polls one token may hold open on this pod at once (CCA-E0642); anonymous callers share one such allowance. */
  streamsPerToken: number;
  /** The same for one node's credential (its assignment, network and log-request polls). */
  streamsPerNode: number;
  /** An agent's assignments answer is paged by this many bytes of JSON (at least one assignment a page). */
  assignmentsPageBytes: number;
  /** Observations and events one node may write, per second and in a burst, on this pod (CCA-E0643). */
  nodeWrites: BucketPolicy;
}

export const defaultLimits: ServerLimits = {
  maxBodyBytes: 4 * 1024 * 1024,
  longPollMs: 30_000,
  heartbeatMs: 15_000,
  queryScanKeys: 10_000,
  watchQueueBytes: 4 * 1024 * 1024,
  watchPodBytes: 256 * 1024 * 1024,
  watchStallMs: 10_000,
  watchCutGraceMs: 10_000,
  watchFlushMs: 10,
  frameCacheBytes: 64 * 1024 * 1024,
  streamsPerToken: 64,
  streamsPerNode: 16,
  assignmentsPageBytes: 4 * 1024 * 1024,
  nodeWrites: { ratePerSecond: 50, burst: 1000 },
};

/** Everything a handler may touch. Handlers hold no state of their own: any pod serves any request. */
export interface ServerDeps {
  store: Store;
  /**
   * The store as the agents' hot routes read it (assignments, observations): the
   * pod's read mirror at or after `atLeast` and the newest revision the pod knows committed;
   * writes go to the store. A route confirms against `store` whatever it would refuse on
   * such a read. Absent: `store`.
   */
  agentView?: (atLeast: number) => Store;
  /**
   * People's requests' store (`lane`, the interactive one) with reads of the mirrored state
   * from the pod's read mirror, each at or after the store's head as of the read (one small
   * round trip instead of the rows: db/mirror.ts ConsistentReads). Absent: `lane`.
   */
  peopleReads?: (lane: Store) => Store;
  metrics: ServerMetrics;
  limits: ServerLimits;
  /** Request IDs for requests that bring none: unique across pods and restarts. */
  newRequestId(): string;
  version: string;
  auth: AuthPolicy;
  /** One access-log line per request (handlers/access-log.ts); absent = none (tests). */
  log?: RequestLog;
  /**
   * This pod's shutdown: once `draining` aborts, /readyz fails (load balancers stop sending)
   * and watch streams end with a reconnect hint (clients resume on another pod).
   */
  draining?: AbortSignal;
  /**
   * Aborts when the pod stops listening (after the drain delay): long polls in flight answer
   * at once with what they have, so they end before the store closes.
   */
  closing?: AbortSignal;
  /** Networks an agent's advertised peer address may lie in besides its registration source; absent: loopback (core/model/peer-address.ts). */
  peerNetworks?: Cidr[];
  /** Requests in flight: the pod closes its store only once they ended. */
  inflight?: InFlight;
  /** Seals secret values before they are stored and opens them for the node that runs them; absent = specs with secrets are refused. */
  secrets?: SecretBox;
  /**
   * `why`: follow a subject's decisions back to a terminal. Injected by the composition
   * root (it lives with the controllers that write the decisions); absent = 404.
   */
  why?: (kind: 'replica' | 'node' | 'service', name: string) => Promise<unknown>;
}
