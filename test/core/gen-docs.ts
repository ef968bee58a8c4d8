/**
 * Writes the generated docs (docs/errors/*.md, docs/keys.md) from the registry and the key
 * layout: `npx tsx test/core/gen-docs.ts`. test/core/docs.test.ts fails when they drift.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedDocs } from './support/docs.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const docs = generatedDocs();
mkdirSync(resolve(root, 'docs/errors'), { recursive: true });
for (const f of readdirSync(resolve(root, 'docs/errors'))) {
  if (!docs.has(`docs/errors/${f}`)) rmSync(resolve(root, 'docs/errors', f));
}
for (const [path, text] of docs) {
  mkdirSync(dirname(resolve(root, path)), { recursive: true });
  writeFileSync(resolve(root, path), text);
}
console.log(`wrote ${docs.size} files`);
