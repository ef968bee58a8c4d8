import type { TestProject } from 'vitest/node';
import { startTestPostgres } from './postgres-server.js';
import { excludedGroups } from './prerequisites.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

/** One Postgres server for the whole run; every test file makes its own databases on it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const without = excludedGroups();
  const pg = await startTestPostgres();
  project.provide('pgAdminUrl', pg.url);
  return async () => {
    await pg.stop();
    // Said last, so nobody mistakes a green run for one that exercised everything.
    if (without.length > 0) process.stdout.write(`\nnot exercised (CCA_TEST_WITHOUT): ${without.join(', ')}\n`);
  };
}
