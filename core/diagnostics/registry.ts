import type { DiagnosticDef } from './types.js';
import { controllerCodes } from './codes/controllers.js';
import { generalCodes } from './codes/general.js';
import { langCodes } from './codes/lang.js';
import { serverCodes } from './codes/server.js';
import { specCodes } from './codes/spec.js';
import { storeCodes } from './codes/store.js';

/** Every code ccattler can emit. A code, once shipped, keeps its meaning forever. */
const all: readonly DiagnosticDef[] = [...generalCodes, ...storeCodes, ...langCodes, ...specCodes, ...serverCodes, ...controllerCodes];

export const registry: ReadonlyMap<string, DiagnosticDef> = new Map(all.map((d) => [d.code, d]));

export type DiagnosticCode =
  | (typeof generalCodes)[number]['code']
  | (typeof storeCodes)[number]['code']
  | (typeof langCodes)[number]['code']
  | (typeof specCodes)[number]['code']
  | (typeof serverCodes)[number]['code']
  | (typeof controllerCodes)[number]['code'];

/** Every registered definition, in code order (for docs, goldens and `cca explain --all`). */
export function allDiagnostics(): readonly DiagnosticDef[] {
  return [...all].sort((a, b) => a.code.localeCompare(b.code));
}

export function lookup(code: string): DiagnosticDef | undefined {
  return registry.get(code);
}
