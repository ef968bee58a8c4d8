import type { Controller } from '../controller.js';
import { retention, type RetentionOptions } from '../decisions/retention.js';
import { auditor } from './auditor.js';
import { endpointController } from './endpoints.js';
import { nodeController, type NodeControllerOptions } from './node.js';
import { replicaController } from './replica.js';
import { schedulerWith, type SchedulerOptions } from './scheduler/index.js';

export { auditor, AUDITOR } from './auditor.js';
export { endpointController, ENDPOINT_CONTROLLER, readyCount } from './endpoints.js';
export { nodeController, NODE_CONTROLLER } from './node.js';
export { replicaController, REPLICA_CONTROLLER } from './replica.js';
export { scheduler, schedulerWith, SCHEDULER, type SchedulerOptions } from './scheduler/index.js';

export interface ControllerOptions {
  node?: NodeControllerOptions;
  scheduler?: SchedulerOptions;
  retention?: (RetentionOptions & { everyMs?: number }) | false;
}

/** Every controller a ccattler server runs, in one list for either driver. */
export function controllers(opts: ControllerOptions = {}): Controller[] {
  const list = [replicaController, schedulerWith(opts.scheduler ?? {}), nodeController(opts.node), auditor, endpointController];
  if (opts.retention !== false) list.push(retention(opts.retention ?? {}));
  return list;
}
