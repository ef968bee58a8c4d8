/**
 * The per-workload supervisor: a small process in its own session that is the workload's
 * parent. It starts the workload in its own process group, records its pid and its exit in
 * the replica's directory, turns SIGTERM into "SIGTERM the group, SIGKILL it after the grace",
 * and stops the workload by itself when the node's fence deadline passes (so a frozen or dead
 * agent still fences). Self-contained (node: imports only) so it starts fast and outlives the
 * agent. Usage: node supervisor.ts <replica dir>
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
// Self-contained too (node: imports only): the output files' rotation, shared with the containerd runtime's cap.
import { DEFAULT_LOG_FILES, DEFAULT_LOG_MAX_BYTES, RotatingLog } from './logfile.js';
// Self-contained as well: the deadline file is overwritten in place, so it is read twice (a torn read is skipped).
import { readFenceFile } from './fence-file.js';
import { startTimeOf } from './proc.js';

interface SupervisorConfig {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  graceMs: number;
  /** File holding the node's fence deadline (epoch ms); '' when there is none. */
  fenceFile: string;
  fenceKillMs: number;
  /** One-shot steps run in order before the main process. */
  init: InitStep[];
  /** Cap of each output file (stdout.log, stderr.log; one rotated copy each kept). */
  logMaxBytes?: number;
  /** Rotated copies kept per output file (default 1). */
  logFiles?: number;
}

const dir = process.argv[2] ?? '';
const config = JSON.parse(readFileSync(join(dir, 'supervisor.json'), 'utf8')) as SupervisorConfig;

function writeAtomic(name: string, text: string): void {
  const tmp = join(dir, `.${name}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, join(dir, name));
}


interface InitStep {
  name: string;
  argv: string[];
  env: Record<string, string>;
  timeoutMs: number;
}

writeAtomic('supervisor.pid', `${process.pid} ${startTimeOf(process.pid)}\n`);
// The workload writes into pipes, not the files: the supervisor rotates them at the cap.
const outLog = new RotatingLog(join(dir, 'stdout.log'), config.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES, Date.now, config.logFiles ?? DEFAULT_LOG_FILES);
const errLog = new RotatingLog(join(dir, 'stderr.log'), config.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES, Date.now, config.logFiles ?? DEFAULT_LOG_FILES);
/** A write that cannot fail the supervisor: with the disk full (or the directory gone) output is dropped, the workload keeps running. */
const keeping = (log: RotatingLog) => ({
  write(b: Buffer): void {
    try {
      log.write(b);
    } catch {
      // dropped: see above
    }
  },
});
const out = keeping(outLog);
const err = keeping(errLog);
let current: ChildProcess | undefined;
let reason = 'exited';
let stopping = false;

function signalGroup(signal: NodeJS.Signals): void {
  if (current?.pid === undefined) return;
  try {
    process.kill(-current.pid, signal);
  } catch {
    // the group is already gone
  }
}

let killAt = Number.POSITIVE_INFINITY;

function stop(graceMs: number, why: string): void {
  // Already stopping: a shorter grace (the fence's, when the agent could not write stop-grace) still applies.
  if (stopping && Date.now() + graceMs >= killAt) return;
  if (!stopping) {
    stopping = true;
    reason = why;
    signalGroup('SIGTERM');
  }
  killAt = Date.now() + graceMs;
  setTimeout(() => signalGroup('SIGKILL'), graceMs).unref();
}

/**
 * Room for exit.json, taken while there is room: on a full disk the record is written into
 * these bytes in place (no new block needed) and renamed, so a stop is still told from a
 * vanished supervisor (CCA-E0502). JSON allows the trailing spaces.
 */
const EXIT_RESERVE = '.exit.json.reserve';
const EXIT_RESERVE_BYTES = 2048;
try {
  writeFileSync(join(dir, EXIT_RESERVE), ' '.repeat(EXIT_RESERVE_BYTES));
} catch {
  // No room even now: exit.json is written the ordinary way or not at all.
}

function finish(exitCode: number, why: string, message = '', errno = ''): never {
  const record = JSON.stringify({ exitCode, reason: why, ...(message ? { message: message.slice(0, 1000) } : {}), ...(errno ? { errno } : {}), at: Date.now() });
  try {
    writeAtomic('exit.json', record);
  } catch {
    try {
      const fd = openSync(join(dir, EXIT_RESERVE), 'r+');
      writeSync(fd, record.padEnd(EXIT_RESERVE_BYTES, ' '), 0, 'utf8');
      closeSync(fd);
      renameSync(join(dir, EXIT_RESERVE), join(dir, 'exit.json'));
    } catch {
      // The replica directory is gone (removed with its state dir): nobody is left to read it.
    }
  }
  process.exit(0);
}

const codeOf = (code: number | null, signal: NodeJS.Signals | null) => code ?? 128 + (signal ? (constants.signals[signal] ?? 9) : 0);

/** One init step in its own process group, killed at its timeout; resolves with its code and output tail. */
function runStep(step: InitStep): Promise<{ exitCode: number; tail: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    let tail = '';
    let timedOut = false;
    const keep = (b: Buffer) => {
      tail = (tail + b.toString('utf8')).slice(-2_000);
      err.write(b);
    };
    const [file, ...args] = step.argv;
    const child = spawn(file ?? 'true', args, { cwd: config.cwd, env: { ...config.env, ...step.env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    current = child;
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const timer = setTimeout(() => {
      timedOut = true;
      tail += `\n(init step ${step.name} timed out after ${step.timeoutMs} ms)`;
      signalGroup('SIGKILL');
    }, step.timeoutMs);
    child.on('error', (e) => resolve({ exitCode: 127, tail: e.message, timedOut }));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ exitCode: codeOf(code, signal), tail: tail.slice(-2_000), timedOut });
    });
  });
}

async function runInit(): Promise<void> {
  for (const step of config.init) {
    if (stopping) finish(143, reason);
    writeAtomic('init.json', JSON.stringify({ step: step.name, state: 'running' }));
    const r = await runStep(step);
    if (stopping) finish(r.exitCode, reason);
    if (r.exitCode !== 0) {
      writeAtomic('init.json', JSON.stringify({ step: step.name, state: 'failed', exitCode: r.exitCode, tail: r.tail, ...(r.timedOut ? { timedOut: true } : {}) }));
      finish(r.exitCode, 'init-failed');
    }
    writeAtomic('init.json', JSON.stringify({ step: step.name, state: 'succeeded', exitCode: 0, tail: '' }));
  }
}

function runMain(): void {
  const [file, ...args] = config.argv;
  const child = spawn(file ?? 'sh', args, { cwd: config.cwd, env: config.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  current = child;
  child.stdout?.on('data', (b: Buffer) => out.write(b));
  child.stderr?.on('data', (b: Buffer) => err.write(b));
  child.on('spawn', () => {
    if (child.pid !== undefined) writeAtomic('workload.pid', `${child.pid} ${startTimeOf(child.pid)}\n`);
  });
  // ENOENT (no such program, or its #! interpreter is missing) and EACCES: the shell's 127 and 126.
  child.on('error', (e: NodeJS.ErrnoException) => finish(e.code === 'EACCES' ? 126 : 127, 'spawn-failed', e.message, e.code ?? ''));
  child.on('exit', (code, signal) => {
    signalGroup('SIGKILL');
    // The pipes drained into the files before the exit is recorded; a process outside the
    // group holding them open gets a second.
    const done = () => finish(codeOf(code, signal), reason);
    child.on('close', done);
    setTimeout(done, 1_000).unref();
  });
}

process.on('SIGTERM', () => {
  let grace = config.graceMs;
  try {
    grace = Number(readFileSync(join(dir, 'stop-grace'), 'utf8')) || grace;
  } catch {
    // no override: the spec's grace
  }
  stop(grace, 'stopped');
});
process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);

setInterval(() => {
  // Orphaned: the replica directory was deleted under us (state dir wiped). Stop, then go.
  if (!existsSync(dir)) stop(Math.min(config.graceMs, config.fenceKillMs), 'orphaned');
}, 1_000);

if (config.fenceFile !== '') {
  setInterval(() => {
    // Missing, empty or caught mid-write: no decision now, the next check reads it again.
    const deadline = readFenceFile(config.fenceFile);
    if (deadline === undefined) return;
    if (Number.isFinite(deadline) && Date.now() >= deadline) stop(Math.min(config.graceMs, config.fenceKillMs), 'fenced');
  }, 200);
}

await runInit();
if (stopping) finish(143, reason);
runMain();
