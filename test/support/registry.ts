import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports.js';

/** A Debian `docker-registry` on 127.0.0.1 (plain HTTP), storage under `dir`, optionally with htpasswd auth. */
export interface TestRegistry {
  /** host:port, as image references name it. */
  host: string;
  /** Copy an OCI archive to `<host>/<repo>` (repo is "name:tag"); resolves with the manifest digest pushed. */
  push(archive: string, repo: string): string;
  stop(): Promise<void>;
}

export async function startRegistry(dir: string, auth?: { user: string; password: string }): Promise<TestRegistry> {
  mkdirSync(join(dir, 'data'), { recursive: true });
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = ['version: 0.1', 'log:', '  level: error', 'storage:', '  filesystem:', `    rootdirectory: ${join(dir, 'data')}`, 'http:', `  addr: ${host}`];
  if (auth) {
    // bcrypt, which is what the registry's htpasswd reader accepts.
    writeFileSync(join(dir, 'htpasswd'), execFileSync('htpasswd', ['-Bbn', auth.user, auth.password], { encoding: 'utf8' }));
    config.push('auth:', '  htpasswd:', '    realm: cca-test', `    path: ${join(dir, 'htpasswd')}`);
  }
  writeFileSync(join(dir, 'config.yml'), `${config.join('\n')}\n`);
  const child: ChildProcess = spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4_000)));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const status = await fetch(`http://${host}/v2/`).then((r) => r.status, () => 0);
    if (status === 200 || status === 401) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`docker-registry did not start on ${host}: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const creds = auth ? ['--dest-creds', `${auth.user}:${auth.password}`] : [];
  return {
    host,
    push(archive, repo) {
      const digestFile = join(dir, `digest-${repo.replace(/[^a-z0-9]/gi, '_')}`);
      execFileSync('skopeo', ['copy', '--quiet', '--dest-tls-verify=false', ...creds, '--digestfile', digestFile, `oci-archive:${archive}`, `docker://${host}/${repo}`], { stdio: ['ignore', 'ignore', 'pipe'] });
      return readFileSync(digestFile, 'utf8').trim();
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
