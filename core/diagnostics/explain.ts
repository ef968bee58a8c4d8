import { lookup } from './registry.js';
import { exitCodeForBlame } from './types.js';
import type { DiagnosticDef } from './types.js';

const blameMeaning: Record<DiagnosticDef['blame'], string> = {
  user: 'something in the input or the request needs changing',
  environment: 'the machine, network or a dependency around ccattler needs attention',
  external: 'a system outside ccattler misbehaved',
  bug: 'ccattler itself is wrong; please report it',
};

/** `cca explain CODE`, offline: everything the registry knows, with templates left as `{placeholders}`. */
export function explain(code: string): string | undefined {
  const def = lookup(code.toUpperCase().startsWith('CCA-') ? code.toUpperCase() : `CCA-${code.toUpperCase()}`);
  if (!def) return undefined;
  const lines = [
    `${def.code}: ${def.title}`,
    '',
    `blame:  ${def.blame} (${blameMeaning[def.blame]}); exit code ${exitCodeForBlame[def.blame]}`,
    `cause:  ${def.cause}`,
    `fix:    ${def.fix}`,
  ];
  if (def.docs) lines.push('', def.docs);
  return lines.join('\n');
}
