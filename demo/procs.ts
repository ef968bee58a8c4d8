import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A real process of the system (server pod, agent), with its output kept for evidence. */
export class Proc {
  readonly child: ChildProcess;
  output = '';

  constructor(
    readonly name: string,
    script: string,
    args: string[],
    env: NodeJS.ProcessEnv = {},
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', path.join(root, script), ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (d) => (this.output += d));
    this.child.stderr!.on('data', (d) => (this.output += d));
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill(signal);
    await Promise.race([exited, new Promise((r) => setTimeout(r, graceMs))]);
    if (this.alive) {
      this.child.kill('SIGKILL');
      await exited;
    }
  }
}

/** `cca …` as a real process; resolves with its exit code and output. */
export async function cca(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return await new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'bin', 'cca.mjs'), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code: code ?? 1, out }));
  });
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function until<T>(what: string, f: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const start = Date.now();
  let last: T | undefined;
  for (;;) {
    try {
      last = await f();
      if (ok(last)) return last;
    } catch {
      // not yet
    }
    if (Date.now() - start > timeoutMs) throw new DemoFailure(`timed out waiting for ${what}`, last);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export class DemoFailure extends Error {
  constructor(
    message: string,
    readonly evidence?: unknown,
  ) {
    super(message);
  }
}
