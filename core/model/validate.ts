import type { z } from 'zod';
import { toDiagnostic } from '../diagnostics/coerce.js';
import { makeDiagnostic } from '../diagnostics/error.js';
import type { Params } from '../diagnostics/error.js';
import type { DiagnosticCode } from '../diagnostics/registry.js';
import { lookup } from '../diagnostics/registry.js';
import type { Diagnostic } from '../diagnostics/types.js';
import { pathText } from './issues.js';
import type { SpecIssue } from './issues.js';
import { serviceSpecSchema } from './service.js';
import type { ServiceSpec } from './service.js';

export type Validated<T> = { ok: true; value: T } | { ok: false; issues: SpecIssue[] };

type ZodIssue = z.core.$ZodIssue;

/** A plain-words reason for a zod issue. Never includes the input value: it may be a secret. */
function reasonFor(issue: ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${article(issue.expected)}`;
    case 'too_small':
      return issue.origin === 'array' || issue.origin === 'string' || issue.origin === 'set'
        ? `must have at least ${String(issue.minimum)} ${issue.origin === 'string' ? 'characters' : 'items'}`
        : `must be at least ${String(issue.minimum)}`;
    case 'too_big':
      return issue.origin === 'array' || issue.origin === 'string' || issue.origin === 'set'
        ? `must have at most ${String(issue.maximum)} ${issue.origin === 'string' ? 'characters' : 'items'}`
        : `must be at most ${String(issue.maximum)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'unrecognized_keys':
      return `has unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `\`${k}\``).join(', ')}`;
    case 'invalid_format':
      return issue.message;
    case 'invalid_union':
      return 'is none of the accepted forms (see the reference)';
    case 'invalid_key':
      return 'has a key that is not allowed';
    case 'invalid_element':
      return 'has an element that is not allowed';
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    default:
      return issue.message;
  }
}

function article(t: string): string {
  return t === 'int' ? 'a whole number' : /^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`;
}

function isParams(v: unknown): v is Params {
  return typeof v === 'object' && v !== null;
}

/** Map one zod issue to a coded issue; custom ones carry their code in params.cca. */
export function fromZodIssue(issue: ZodIssue, prefix: (string | number)[] = []): SpecIssue {
  const path = [...prefix, ...issue.path.filter((p): p is string | number => typeof p !== 'symbol')];
  if (issue.code === 'custom' && isParams(issue.params) && typeof issue.params.cca === 'string' && lookup(issue.params.cca)) {
    const { cca, ...params } = issue.params;
    return { code: cca as DiagnosticCode, params: params as Params, path };
  }
  if (issue.code === 'invalid_union') {
    // A union of which one branch failed only on a coded custom check: report that check.
    for (const branch of issue.errors) {
      const coded = branch.find((i) => i.code === 'custom' && isParams(i.params) && typeof i.params.cca === 'string');
      if (coded && branch.length === 1) return fromZodIssue({ ...coded, path: [...issue.path, ...coded.path] }, prefix);
    }
  }
  return { code: 'CCA-E0302', params: { path: pathText(path), reason: reasonFor(issue) }, path };
}

/** Validate untrusted input (API body, a lowered .cca block) into a ServiceSpec with defaults. */
export function validateService(input: unknown): Validated<ServiceSpec> {
  try {
    const r = serviceSpecSchema.safeParse(input);
    if (r.success) return { ok: true, value: r.data };
    return { ok: false, issues: r.error.issues.map((i) => fromZodIssue(i)) };
  } catch (e) {
    // Only hostile input (a throwing getter or proxy) or our own bug gets here: never a raw error.
    const d = toDiagnostic(e, 'the spec validator');
    return { ok: false, issues: [{ code: 'CCA-E0001', params: d.params, path: [] }] };
  }
}

export function issueToDiagnostic(issue: SpecIssue): Diagnostic {
  return makeDiagnostic(issue.code, issue.params);
}
