import { REDACTED } from '../redact.js';
import { rolloutChanges } from './resolve.js';
import type { ServiceSpec } from './service.js';

export interface FieldChange {
  /** Dotted path, list items by index: `resources.cpuMillis`, `ports.0.container`. */
  path: string;
  old?: unknown;
  new?: unknown;
}

export interface ServiceChange {
  name: string;
  changes: FieldChange[];
  /** Fields of the replicas' template that changed: non-empty means a rolling update replaces them (docs/rollouts.md). */
  rolls: string[];
}

export interface ApplyPlan {
  added: string[];
  changed: ServiceChange[];
  unchanged: string[];
  removed: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Field-level differences between two JSON-like values, leaves only. */
export function diffValues(a: unknown, b: unknown, path: string[] = []): FieldChange[] {
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => diffValues(a[k], b[k], [...path, k]));
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.max(a.length, b.length);
    return Array.from({ length: n }, (_, i) => diffValues(a[i], b[i], [...path, String(i)])).flat();
  }
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  const change: FieldChange = { path: path.join('.') };
  if (a !== undefined) change.old = a;
  if (b !== undefined) change.new = b;
  return [change];
}

/** A secret's value never appears in a diff: only that it changed. */
function redactChange(c: FieldChange): FieldChange {
  if (!/^secrets\.\d+\.value$/.test(c.path)) return c;
  return { path: c.path, ...(c.old !== undefined ? { old: REDACTED } : {}), ...(c.new !== undefined ? { new: REDACTED } : {}) };
}

/** What applying `next` over `current` would do; with `prune`, services not in `next` go. */
export function planApply(current: readonly ServiceSpec[], next: readonly ServiceSpec[], prune: boolean): ApplyPlan {
  const before = new Map(current.map((s) => [s.name, s]));
  const plan: ApplyPlan = { added: [], changed: [], unchanged: [], removed: [] };
  for (const s of [...next].sort((a, b) => a.name.localeCompare(b.name))) {
    const old = before.get(s.name);
    if (!old) plan.added.push(s.name);
    else {
      const changes = diffValues(old, s).map(redactChange);
      if (changes.length === 0) plan.unchanged.push(s.name);
      else plan.changed.push({ name: s.name, changes, rolls: rolloutChanges(old, s) });
    }
  }
  if (prune) {
    const keep = new Set(next.map((s) => s.name));
    plan.removed = [...before.keys()].filter((n) => !keep.has(n)).sort();
  }
  return plan;
}
