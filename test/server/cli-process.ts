/**
 * `cca …` as a real process (bin/cca.mjs), for the DBA commands and pods started the way an
 * operator starts them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { freePort } from '../support/postgres-server.js';
import { waitFor } from '../support/wait.js';

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run `cca ARGS…` to its end. A `cca server` run this way is expected to refuse to start: if
 * it prints that it is listening, it is killed at once (code null), so the test fails fast.
 */
export function cca(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/cca.mjs', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      if (/listening on/.test(stdout)) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface CliPod {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** `cca server --store STORE --port P FLAGS…`, ready when /readyz answers. */
export async function ccaServer(store: string, flags: string[]): Promise<CliPod> {
  const port = await freePort();
  const child = spawn(process.execPath, ['bin/cca.mjs', 'server', '--store', store, '--port', String(port), ...flags], {
    env: { ...process.env, CCA_ADMIN_TOKEN: ADMIN, CCA_JOIN_TOKEN: JOIN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  };
  await waitFor(`cca server to be ready`, () => fetch(`${url}/readyz`).then((r) => r.ok), { timeoutMs: 30_000, retryErrors: true }).catch(async (e: Error) => {
    await stop();
    throw new Error(`${e.message}\ncca server printed:\n${out}`);
  });
  return { url, child, output: () => out, stop };
}
