import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startTestPostgres } from './postgres-server.js';
import { excludedGroups } from './prerequisites.js';
import { buildConsole } from '../../build/console.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

/**
 * One Postgres server for the whole run; every test file makes its own databases on it.
 * And `dist/` built from these sources (`npm run build`, incremental), with CCA_COMPILED=1 for
 * every process the tests start: servers, agents, supervisors and `cca` run what the package
 * runs (agent/node-entry.ts), without tsx's start-up in each — those were most of the suite's
 * CPU. In-process tests still import the sources.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const without = excludedGroups();
  await buildDist();
  process.env.CCA_COMPILED = '1';
  const pg = await startTestPostgres();
  project.provide('pgAdminUrl', pg.url);
  return async () => {
    await pg.stop();
    // Said last, so nobody mistakes a green run for one that exercised everything.
    if (without.length > 0) process.stdout.write(`\nnot exercised (CCA_TEST_WITHOUT): ${without.join(', ')}\n`);
  };
}

async function buildDist(): Promise<void> {
  const root = path.resolve(import.meta.dirname, '..', '..');
  try {
    execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'pipe' });
  } catch (e) {
    const out = (e as { stdout?: Buffer }).stdout?.toString() ?? String(e);
    throw new Error(`the test suite builds dist/ first (npm run build), and it failed:\n${out}`);
  }
  await buildConsole(root, path.join(root, 'dist', 'console'));
}
