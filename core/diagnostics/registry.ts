import type { DiagnosticDef } from './types.js';
import { serverCodes } from './codes/server.js';
import { storeCodes } from './codes/store.js';

/** Every code ccattler can emit. A code, once shipped, keeps its meaning forever. */
const all: readonly DiagnosticDef[] = [...storeCodes, ...serverCodes];

export const registry: ReadonlyMap<string, DiagnosticDef> = new Map(all.map((d) => [d.code, d]));

export type DiagnosticCode = (typeof storeCodes)[number]['code'] | (typeof serverCodes)[number]['code'];

export function lookup(code: string): DiagnosticDef | undefined {
  return registry.get(code);
}
