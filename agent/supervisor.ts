/**
 * The per-workload supervisor: a small process in its own session that is the workload's
 * parent. It starts the workload in its own process group, records its pid and its exit in
 * the replica's directory, turns SIGTERM into "SIGTERM the group, SIGKILL it after the grace",
 * and stops the workload by itself when the node's fence deadline passes (so a frozen or dead
 * agent still fences). Self-contained (node: imports only) so it starts fast and outlives the
 * agent. Usage: node supervisor.ts <replica dir>
 */
import { spawn } from 'node:child_process';
import { openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';

interface SupervisorConfig {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  graceMs: number;
  /** File holding the node's fence deadline (epoch ms); '' when there is none. */
  fenceFile: string;
  fenceKillMs: number;
}

const dir = process.argv[2] ?? '';
const config = JSON.parse(readFileSync(join(dir, 'supervisor.json'), 'utf8')) as SupervisorConfig;

function writeAtomic(name: string, text: string): void {
  const tmp = join(dir, `.${name}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, join(dir, name));
}

function startTime(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

writeAtomic('supervisor.pid', `${process.pid} ${startTime(process.pid)}\n`);
const out = openSync(join(dir, 'stdout.log'), 'a');
const err = openSync(join(dir, 'stderr.log'), 'a');
const [file, ...args] = config.argv;
const child = spawn(file ?? 'sh', args, { cwd: config.cwd, env: config.env, detached: true, stdio: ['ignore', out, err] });
let reason = 'exited';
let stopping = false;

function signalGroup(signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

function stop(graceMs: number, why: string): void {
  if (stopping) return;
  stopping = true;
  reason = why;
  signalGroup('SIGTERM');
  setTimeout(() => signalGroup('SIGKILL'), graceMs).unref();
}

child.on('spawn', () => {
  if (child.pid !== undefined) writeAtomic('workload.pid', `${child.pid} ${startTime(child.pid)}\n`);
});
child.on('error', (e) => {
  writeAtomic('exit.json', JSON.stringify({ exitCode: 127, reason: 'spawn-failed', message: e.message, at: Date.now() }));
  process.exit(0);
});
child.on('exit', (code, signal) => {
  signalGroup('SIGKILL');
  const signo = signal ? (constants.signals[signal] ?? 9) : 0;
  const exitCode = code ?? 128 + signo;
  writeAtomic('exit.json', JSON.stringify({ exitCode, reason, at: Date.now() }));
  process.exit(0);
});

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

if (config.fenceFile !== '') {
  setInterval(() => {
    let deadline = Number.POSITIVE_INFINITY;
    try {
      deadline = Number(readFileSync(config.fenceFile, 'utf8'));
    } catch {
      return;
    }
    if (Number.isFinite(deadline) && Date.now() >= deadline) stop(Math.min(config.graceMs, config.fenceKillMs), 'fenced');
  }, 200);
}
