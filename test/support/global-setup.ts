import type { TestProject } from 'vitest/node';
import { startTestPostgres } from './postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

/** One Postgres server for the whole run; every test file makes its own databases on it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const pg = await startTestPostgres();
  project.provide('pgAdminUrl', pg.url);
  return () => pg.stop();
}
