/**
 * The package's root folder (a `file:` URL ending in `/`), from a module's `import.meta.url`
 * and how many folders below the root that module sits in the source tree (`server/version.ts`
 * is 1). A compiled module (`.js`) sits one folder deeper, under `dist/` (`npm run build`), so
 * package files (package.json, web/, db/postgres/migrations/) resolve the same from both.
 */
export function packageRoot(moduleUrl: string, depth: number): URL {
  const compiled = moduleUrl.endsWith('.js');
  return new URL('../'.repeat(depth + (compiled ? 1 : 0)), moduleUrl);
}

/** Whether this module runs compiled (from `dist/`) rather than as TypeScript source through tsx. */
export function isCompiled(moduleUrl: string): boolean {
  return moduleUrl.endsWith('.js');
}
