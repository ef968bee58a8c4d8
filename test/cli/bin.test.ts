import { spawnSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { closedUrl } from './harness.js';

/** The installed launcher, as `npx cca` runs it: a real process and its real exit code. */
function bin(args: string[]) {
  // The sources through tsx, as in a checkout: not the suite's dist/ (CCA_COMPILED, global-setup.ts).
  const { CCA_COMPILED: _compiled, ...env } = process.env;
  const r = spawnSync(process.execPath, ['bin/cca.mjs', ...args], { encoding: 'utf8', env: { ...env, CCA_STATE_DIR: '/nonexistent/cca-state', CCA_CONFIG: '/nonexistent/cca.json' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bin/cca.mjs', () => {
  test('runs commands through tsx and exits with the code from the blame', async () => {
    const ok = bin(['explain', 'CCA-E0701']);
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toContain('CCA-E0701: server unreachable');
    const url = await closedUrl();
    const down = bin(['get', 'services', '--server', url]);
    expect(down.code).toBe(2);
    expect(down.stderr).toContain(`error CCA-E0701: could not reach the server at ${url}: ECONNREFUSED`);
    expect(down.stderr).not.toMatch(/\n\s+at /);
    expect(bin(['frobnicate']).code).toBe(1);
  });

  test('cca server and cca agent get their own flags (global ones before the command stay with cca)', () => {
    expect(bin(['server', '--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('usage: cca server') });
    expect(bin(['--verbose', 'agent', '--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('usage: cca agent') });
  });
});
