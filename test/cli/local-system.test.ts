import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ADMIN, cca, closedUrl, liveServers } from './harness.js';

const live = liveServers();

/** A folder laid out as `npm start` leaves .ccattler/: local.json (the server) and tokens.json (0600). */
function localHome(server: string | undefined, admin = ADMIN, mode = 0o600): string {
  const home = mkdtempSync(join(tmpdir(), 'cca-local-'));
  if (server) writeFileSync(join(home, 'local.json'), JSON.stringify({ server }));
  writeFileSync(join(home, 'tokens.json'), JSON.stringify({ admin, join: 'cca_join_x' }));
  chmodSync(join(home, 'tokens.json'), mode);
  return home;
}

describe('the local system npm start runs', () => {
  test('with no server or token given, cca uses the server in local.json and the admin token in tokens.json', async () => {
    const l = await live();
    const r = await cca(['get', 'nodes'], { env: { CCA_HOME: localHome(l.url) } });
    expect(r, r.stderr).toMatchObject({ code: 0, stderr: '' });
  });

  test('without local.json (npm start stopped cleanly, or never ran) nothing is read: the default server, no token', async () => {
    const r = await cca(['get', 'nodes'], { env: { CCA_HOME: localHome(undefined) } });
    // The default server, no token: unreachable — or, when a pod listens on the default port
    // (a developer's own `npm start` while the tests run; a full run met one), it refusing a request with no token.
    expect(r.stderr).toMatch(/could not reach the server at http:\/\/127\.0\.0\.1:7070|CCA-E0605: .*the request carried no valid token/);
  });

  test('the admin token goes only to the local server: another server named by CCA_SERVER gets none', async () => {
    const l = await live();
    const other = await live();
    const home = localHome(l.url);
    // Both servers accept ADMIN: only a token not sent is refused.
    const r = await cca(['get', 'nodes'], { env: { CCA_HOME: home, CCA_SERVER: other.url } });
    expect(r.stderr).toContain('CCA-E0605');
    // The same server by CCA_SERVER (a trailing slash does not matter) still gets it.
    expect((await cca(['get', 'nodes'], { env: { CCA_HOME: home, CCA_SERVER: `${l.url}/` } })).code).toBe(0);
  });

  test('a given token wins over the local one', async () => {
    const l = await live();
    const r = await cca(['get', 'nodes'], { env: { CCA_HOME: localHome(l.url), CCA_TOKEN: 'cca_admin_wrong' } });
    expect(r.stderr).toContain('CCA-E0605');
  });

  test('a tokens.json others can read is refused (CCA-E0706), a broken local.json is CCA-E0707', async () => {
    const l = await live();
    const home = localHome(l.url, ADMIN, 0o644);
    const r = await cca(['get', 'nodes'], { env: { CCA_HOME: home } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CCA-E0706');
    expect(r.stderr).toContain(join(home, 'tokens.json'));
    writeFileSync(join(home, 'local.json'), '{"server": "ftp://x"}');
    const bad = await cca(['get', 'nodes'], { env: { CCA_HOME: home } });
    expect(bad.stderr).toContain('CCA-E0707');
    expect(bad.stderr).toContain(join(home, 'local.json'));
  });

  test('a local.json others can change is refused (CCA-E0724): it decides where the admin token goes', async () => {
    const l = await live();
    const home = localHome(l.url);
    chmodSync(join(home, 'local.json'), 0o666);
    const r = await cca(['get', 'nodes'], { env: { CCA_HOME: home } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CCA-E0724');
    expect(r.stderr).toContain('has mode 0666: others can change it');
  });

  test('offline commands read none of it', async () => {
    const home = localHome(await closedUrl());
    writeFileSync(join(home, 'local.json'), 'not json');
    expect((await cca(['explain', 'CCA-E0701'], { env: { CCA_HOME: home } })).code).toBe(0);
  });
});
