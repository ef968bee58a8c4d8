/** The scheduler's shared shapes, apart so its planners (holds.ts, plan-placements.ts) import neither each other. */
import type { Compare } from '../../../db/store.js';
import type { Evidence } from '../../decisions/record.js';
import type { Fact } from '../../facts.js';

/** A replica waiting for a node, with its service's spec. */
export interface Pending {
  record: Fact<'replica'>;
  spec: Fact<'service'>;
  /** What released an `after` hold (holds.ts): compared and cited by the placement. */
  gate?: Gate;
}

/** What released an `after` gate: compared by the placement txn and cited by its decision. */
export interface Gate {
  compares: Compare[];
  evidence: Evidence[];
  reasons: string[];
}
