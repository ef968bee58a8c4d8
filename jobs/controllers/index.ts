import type { Controller } from '../controller.js';
import { retention, type RetentionOptions } from '../decisions/retention.js';
import { auditor } from './auditor.js';
import { autoscaler, type AutoscalerOptions } from './autoscaler.js';
import { endpointController } from './endpoints.js';
import { networkController } from './network.js';
import { nodeController, type NodeControllerOptions } from './node.js';
import { replicaControllerWith } from './replica.js';
import { rolloutController } from './rollout.js';
import { schedulerWith, type SchedulerOptions } from './scheduler/index.js';
import { storageController } from './storage.js';
import type { Turn } from '../write.js';

export { auditor, AUDITOR } from './auditor.js';
export { autoscaler, autoscalerController, AUTOSCALER, type AutoscalerOptions } from './autoscaler.js';
export { endpointController, ENDPOINT_CONTROLLER, readyCount } from './endpoints.js';
export { networkController, NETWORK_CONTROLLER } from './network.js';
export { nodeController, NODE_CONTROLLER } from './node.js';
export { replicaController, replicaControllerWith, type ReplicaControllerOptions } from './replica.js';
export { REPLICA_CONTROLLER } from './replica-draft.js';
export { rolloutController, ROLLOUT_CONTROLLER } from './rollout.js';
export { scheduler, schedulerWith, SCHEDULER, type SchedulerOptions } from './scheduler/index.js';
export { storageController, STORAGE_CONTROLLER } from './storage.js';

export interface ControllerOptions {
  /**
   * Txns a step of the replica controller and the scheduler keeps in flight (default 1, the
   * simulation's order). PostgresStore batches concurrent txns into one Postgres
   * transaction, so a server pod wants more (server/step-options.ts: 16); `scheduler` overrides it.
   */
  txnConcurrency?: number;
  /** How the scheduler gives the event loop a turn while it builds ahead (jobs/write.ts `Turn`). */
  turn?: Turn;
  node?: NodeControllerOptions;
  scheduler?: SchedulerOptions;
  autoscaler?: AutoscalerOptions;
  retention?: (RetentionOptions & { everyMs?: number }) | false;
}

/** Every controller a ccattler server runs, in one list for either driver. */
export function controllers(opts: ControllerOptions = {}): Controller[] {
  // One controller per line: the order is the simulation's step order for a seed.
  const list = [
    replicaControllerWith({ txnConcurrency: opts.txnConcurrency }),
    schedulerWith({ txnConcurrency: opts.txnConcurrency, turn: opts.turn, ...opts.scheduler }),
    nodeController(opts.node),
    auditor,
    endpointController,
    rolloutController,
    autoscaler(opts.autoscaler),
    networkController,
    storageController,
  ];
  if (opts.retention !== false) list.push(retention(opts.retention ?? {}));
  return list;
}
