import { readFileSync } from 'node:fs';
import { packageRoot } from '../core/package-root.js';

/** The package version, read once: the server reports it on /healthz and the CLI on `cca version`. */
export const version: string = (JSON.parse(readFileSync(new URL('package.json', packageRoot(import.meta.url, 1)), 'utf8')) as { version: string }).version;
