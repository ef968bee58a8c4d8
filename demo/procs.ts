import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor, WaitTimeout } from '../test/support/wait.js';
import { nodeEntry } from '../agent/node-entry.js';

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
    this.child = spawn(process.execPath, [...nodeEntry(import.meta.url, `../${script.replace(/\.ts$/, '')}`), ...args], {
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

/**
 * `cca …` as a real process; resolves with its exit code and output. One that has not ended
 * after `timeoutMs` is killed and answers 124 (as timeout(1)), its output saying so: a hung
 * command fails its step instead of the whole test's timeout, which would lose the narrative.
 */
export async function cca(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<{ code: number; out: string }> {
  return await new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'bin', 'cca.mjs'), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(hung ? { code: 124, out: `${out}\n[cca ${args[0] ?? ''} had not ended after ${timeoutMs / 1000} s: killed]` } : { code: code ?? 1, out });
    });
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

/**
 * Poll until `ok` holds (errors from a restarting server count as "not yet"); a timeout is a
 * DemoFailure naming what was awaited, with the last value seen as its evidence.
 */
export async function until<T>(what: string, f: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  try {
    return await waitFor(what, f, ok, { timeoutMs, everyMs: 250, retryErrors: true });
  } catch (e) {
    if (e instanceof WaitTimeout) throw new DemoFailure(e.message, e.last);
    throw e;
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
