import type { DiagnosticDef } from './types.js';
import { agentCodes } from './codes/agent.js';
import { agentRecoveryCodes } from './codes/agent-recovery.js';
import { agentDiskCodes } from './codes/agent-disk.js';
import { cliCodes } from './codes/cli.js';
import { controllerCodes } from './codes/controllers.js';
import { generalCodes } from './codes/general.js';
import { langCodes } from './codes/lang.js';
import { serverCodes } from './codes/server.js';
import { specCodes } from './codes/spec.js';
import { storeCodes } from './codes/store.js';
import { dbaCodes } from './codes/dba.js';
import { rolloutCodes } from './codes/rollouts.js';
import { limitCodes } from './codes/limits.js';
import { admissionCodes } from './codes/admission.js';
import { observabilityCodes } from './codes/observability.js';

/**
 * Every code ccattler can emit, one area per line (areas merge without conflicts). A code,
 * once shipped, keeps its meaning forever.
 */
const areas = [
  generalCodes,
  storeCodes,
  dbaCodes,
  langCodes,
  specCodes,
  controllerCodes,
  agentCodes,
  agentRecoveryCodes,
  agentDiskCodes,
  serverCodes,
  cliCodes,
  rolloutCodes,
  limitCodes,
  admissionCodes,
  observabilityCodes,
] as const;

const all: readonly DiagnosticDef[] = areas.flat();

export const registry: ReadonlyMap<string, DiagnosticDef> = new Map(all.map((d) => [d.code, d]));

export type DiagnosticCode = (typeof areas)[number][number]['code'];

/** Every registered definition, in code order (for docs, goldens and `cca explain --all`). */
export function allDiagnostics(): readonly DiagnosticDef[] {
  return [...all].sort((a, b) => a.code.localeCompare(b.code));
}

export function lookup(code: string): DiagnosticDef | undefined {
  return registry.get(code);
}
