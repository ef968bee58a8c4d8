import { lookup } from './registry.js';
import type { DiagnosticCode } from './registry.js';
import type { Diagnostic } from './types.js';
import type { Blame } from './types.js';

export type Params = Record<string, string | number | boolean>;

/** Fill `{name}` placeholders; an unknown name stays visible rather than vanishing silently. */
export function fillTemplate(template: string, params: Params): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.hasOwn(params, name) ? String(params[name]) : whole,
  );
}

export function makeDiagnostic(code: DiagnosticCode | string, params: Params = {}): Diagnostic {
  const def = lookup(code);
  if (!def) {
    // An unregistered code is itself a bug; keep the information instead of throwing.
    return {
      code,
      blame: 'bug',
      title: 'unregistered diagnostic',
      message: `code ${code} is not in the registry`,
      fix: 'report this with `cca bundle`',
      params,
    };
  }
  return {
    code: def.code,
    blame: def.blame,
    title: def.title,
    message: fillTemplate(def.cause, params),
    fix: fillTemplate(def.fix, params),
    params,
  };
}

/** The one error type every layer throws for an expected failure. */
export class CcaError extends Error {
  readonly diagnostic: Diagnostic;

  constructor(code: DiagnosticCode | string, params: Params = {}, options?: { cause?: unknown }) {
    const diagnostic = makeDiagnostic(code, params);
    super(`${diagnostic.code} ${diagnostic.message}`, options);
    this.name = 'CcaError';
    this.diagnostic = diagnostic;
  }

  get code(): string {
    return this.diagnostic.code;
  }

  get blame(): Blame {
    return this.diagnostic.blame;
  }
}

export function isCcaError(e: unknown, code?: string): e is CcaError {
  return e instanceof CcaError && (code === undefined || e.code === code);
}
