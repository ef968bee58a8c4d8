import type { DiagnosticCode } from '../diagnostics/registry.js';
import type { Params } from '../diagnostics/error.js';

/**
 * A validation finding before it becomes a diagnostic: the code, its facts, and where in
 * the spec it points. The language maps `path` back to a file span; the API reports it as is.
 */
export interface SpecIssue {
  code: DiagnosticCode;
  params: Params;
  /** Path inside the service spec, e.g. ['ports', 1, 'container']. */
  path: (string | number)[];
  /** Set-level findings name the service they belong to. */
  service?: string;
}

/** `ports[1].container` — how a path reads in a message. */
export function pathText(path: readonly (string | number)[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? p : `.${p}`;
  return out === '' ? 'the spec' : out;
}
