import { allDiagnostics, errorIndex, errorPage, renderAll } from '../../../core/diagnostics/index.js';
import { keysMarkdown } from '../../../core/keys.js';
import { parse } from '../../../core/lang/index.js';
import { examples } from './examples.js';

/** The plain output for an example input: only the diagnostics with the example's code, so pages stay focused. */
export function exampleOutput(code: string, source: string): string {
  const file = 'example.cca';
  const ds = parse(source, file).diagnostics.filter((d) => d.code === code);
  return renderAll(ds.slice(0, 1), 'plain', { sources: new Map([[file, source]]) });
}

/** Every generated doc, by path relative to the repo: error pages, their index, the key layout. */
export function generatedDocs(): Map<string, string> {
  const docs = new Map<string, string>();
  const defs = allDiagnostics();
  for (const d of defs) {
    const source = examples[d.code];
    docs.set(`docs/errors/${d.code}.md`, errorPage(d, source === undefined ? undefined : { source, output: exampleOutput(d.code, source) }));
  }
  docs.set('docs/errors/README.md', errorIndex(defs));
  docs.set('docs/keys.md', keysMarkdown());
  return docs;
}
