import type { ServerLimits } from '../deps.js';
import { NodeWriteRate } from './node-writes.js';
import { StreamSlots } from './stream-slots.js';
import { PodBytes } from '../watch/watch-queue.js';

/**
 * What one pod counts to keep its promises on memory and fairness: stream slots per
 * credential, the bytes its watchers hold, each node's write rate. Made once per app;
 * nothing in it is needed by another pod (each bounds its own connections).
 */
export interface PodLimits {
  slots: StreamSlots;
  watchBytes: PodBytes;
  nodeWrites: NodeWriteRate;
}

export function podLimits(limits: ServerLimits, now: () => number = Date.now): PodLimits {
  return {
    slots: new StreamSlots(limits),
    watchBytes: new PodBytes(limits.watchPodBytes),
    nodeWrites: new NodeWriteRate(limits.nodeWrites, now),
  };
}
