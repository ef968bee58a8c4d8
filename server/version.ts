import { readFileSync } from 'node:fs';

/** The package version, read once: the server reports it on /healthz and the CLI on `cca version`. */
export const version: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
