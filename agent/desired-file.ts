import { messageOf } from '../core/diagnostics/index.js';
import { assignmentSchema, type Assignment } from '../core/model/index.js';
import type { CachedDesired } from './core/ports.js';

/** The form of `desired.json` this agent writes; a file without `format` is the same form, from before the field. */
export const DESIRED_FORMAT = 1;

/**
 * The cached desired state as read at start (agent/core/ports.ts, CachedDesired): `unknown`
 * is every replica (`'all'`) when the file is missing or unusable.
 */
export interface DesiredRead extends CachedDesired {
  /** Why the file could not be used (whole or in part): the agent reports it and keeps the file aside. */
  problem?: { code: 'CCA-E0592' | 'CCA-E0593'; reason: string };
}

const none = (problem?: DesiredRead['problem']): DesiredRead => ({ revision: 0, assignments: [], unknown: 'all', ...(problem ? { problem } : {}) });
const unreadable = (reason: string) => none({ code: 'CCA-E0592', reason });
const skewed = (reason: string) => none({ code: 'CCA-E0593', reason });

const describe = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? `an object with ${Object.keys(v as object).slice(0, 5).join(', ') || 'no fields'}` : `a ${typeof v}`);

/**
 * Read the text of `desired.json` (undefined: no file). Pure, so each way a file can be bad
 * is a unit test: empty, truncated or corrupt (not JSON), JSON of the wrong shape, another
 * format, or assignments this agent's schema refuses (kept: the others; unknown: theirs).
 */
export function parseDesired(text: string | undefined): DesiredRead {
  if (text === undefined) return none();
  if (text.trim() === '') return unreadable(text.length === 0 ? 'the file is empty (0 bytes): a write cut short, e.g. by a power loss' : 'the file holds only whitespace');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return unreadable(`not JSON (${messageOf(e)}): truncated or corrupt, ${text.length} bytes`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return unreadable(`expected { format, revision, assignments }, found ${describe(raw)}`);
  const o = raw as Record<string, unknown>;
  if ('format' in o && o.format !== DESIRED_FORMAT) {
    const newer = typeof o.format === 'number' && o.format > DESIRED_FORMAT;
    return skewed(`format ${JSON.stringify(o.format)}, ${newer ? 'newer than' : 'not'} the format ${DESIRED_FORMAT} this agent reads${newer ? ' (written by a newer agent)' : ''}`);
  }
  if (!Array.isArray(o.assignments) || typeof o.revision !== 'number') return unreadable(`expected { format, revision, assignments }, found ${describe(raw)}`);
  const assignments: Assignment[] = [];
  const refused: { replica: unknown; issue: string }[] = [];
  for (const a of o.assignments) {
    const r = assignmentSchema.safeParse(a);
    if (r.success) assignments.push(r.data);
    else refused.push({ replica: (a as { replica?: unknown } | null)?.replica, issue: `${r.error.issues[0]?.path.join('.') ?? ''}: ${r.error.issues[0]?.message ?? 'refused'}` });
  }
  if (refused.length === 0) return { revision: o.revision, assignments, unknown: new Set() };
  // An assignment this agent's schema refuses (an older or newer server's) is not started;
  // its workload, if the runtime holds one, is left alone until the server says.
  const ids = refused.map((r) => r.replica);
  const named = ids.every((id): id is string => typeof id === 'string');
  const problem = { code: 'CCA-E0593' as const, reason: `${refused.length} of ${o.assignments.length} assignment(s) do not match this agent's schema (${named ? `replicas ${ids.join(', ')}` : 'some without a replica id'}; first: ${refused[0]!.issue})` };
  // Without every refused replica's id nothing can be told apart: nothing is known, so nothing is started either.
  if (!named) return { ...none(problem) };
  return { revision: o.revision, assignments, unknown: new Set(ids.filter((id) => !assignments.some((a) => a.replica === id))), problem };
}
