import { prefixOf } from '../../core/keys.js';
import { canonicalJson } from '../../core/model/template.js';
import type { Change } from '../controller.js';

const OBSERVED = prefixOf('observed');
/** The fields a usage refresh moves: the figure and the report's time. */
const MOVING = new Set(['usage', 'at']);
const judged = new WeakMap<Change, boolean>();

/**
 * A report that moved only its usage figure (and its time): what an agent re-sends for each
 * running replica every 30 s (`usageEveryMs`). Only the autoscaler reads usage, on a timer of
 * its own; the replica, endpoint, rollout and network steps decide on a report's state,
 * exit, health, init, address and ports, so they pass over it (`Controller.ignores`). Each
 * such report woke all four, the network's one step reading the whole cluster: work growing
 * as N² at steady state (docs/benchmarks.md, cost item 7). Judged once per change.
 */
export function onlyUsageMoved(change: Change): boolean {
  let v = judged.get(change);
  if (v === undefined) judged.set(change, (v = judge(change)));
  return v;
}

function judge(c: Change): boolean {
  if (c.deleted || c.before === undefined || c.after === undefined || !c.key.startsWith(OBSERVED)) return false;
  const before = parsed(c.before);
  const after = parsed(c.after);
  return before !== undefined && after !== undefined && canonicalJson(before) === canonicalJson(after);
}

/** The report without its moving fields; undefined when it is not a JSON object. */
function parsed(text: string): Record<string, unknown> | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  return Object.fromEntries(Object.entries(v).filter(([k]) => !MOVING.has(k)));
}
