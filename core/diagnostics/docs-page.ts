import { exitCodeForBlame } from './types.js';
import type { DiagnosticDef } from './types.js';

/** The generated page `docs/errors/<CODE>.md`; the test compares checked-in pages with this. */
export interface PageExample {
  /** A `.cca` input that triggers the code. */
  source: string;
  /** What `cca` prints for it. */
  output: string;
}

export function errorPage(def: DiagnosticDef, example?: PageExample): string {
  const lines = [
    `<!-- generated from core/diagnostics/codes; do not edit by hand -->`,
    `# ${def.code}: ${def.title}`,
    '',
    `- **Blame:** ${def.blame} (exit code ${exitCodeForBlame[def.blame]})`,
    `- **Cause:** ${def.cause}`,
    `- **Fix:** ${def.fix}`,
    '',
    'Words in `{braces}` are filled in with the facts of each occurrence.',
    '',
    `Offline: \`cca explain ${def.code}\`.`,
  ];
  if (def.docs) lines.push('', def.docs);
  if (example) {
    lines.push('', '## Example', '', '```cca', example.source.trimEnd(), '```', '', '```text', example.output.trimEnd(), '```');
  }
  return lines.join('\n') + '\n';
}

/** `docs/errors/README.md`: one row per code. */
export function errorIndex(defs: readonly DiagnosticDef[]): string {
  const rows = defs.map((d) => `| [${d.code}](${d.code}.md) | ${d.blame} | ${d.title} |`);
  return [
    '<!-- generated from core/diagnostics/codes; do not edit by hand -->',
    '# Diagnostic codes',
    '',
    'Ranges: E00xx general and bugs, E01xx the fact store, E02xx the `.cca` language,',
    'E03xx service spec validation; E04xx and up belong to controllers, agent, server and CLI.',
    '',
    '| code | blame | title |',
    '|---|---|---|',
    ...rows,
  ].join('\n') + '\n';
}
