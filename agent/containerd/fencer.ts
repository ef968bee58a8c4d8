/**
 * The containerd runtime's fencer: one small detached process per node that stops the node's
 * containers when the fence deadline in `<state>/fence-at` passes, so a SIGKILLed or frozen
 * agent still fences (the process runtime's supervisors do the same for their workloads).
 * Self-contained (node: imports only). Usage:
 *   node fencer.ts <ctr> <address> <namespace> <fence file> <kill ms> <pid file>
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { readFenceFile } from '../fence-file.js';
import { startTimeOf } from '../proc.js';

const [ctrBin = 'ctr', address = '', namespace = '', fenceFile = '', killMsText = '2000', pidFile = ''] = process.argv.slice(2);
const killMs = Number(killMsText);
const PREFIX = 'cca-';


function ctr(args: string[]): Promise<string> {
  return new Promise((resolve) => execFile(ctrBin, ['-a', address, '-n', namespace, ...args], { timeout: 10_000 }, (_e, stdout) => resolve(stdout ?? '')));
}

async function running(): Promise<string[]> {
  const out = await ctr(['task', 'ls']);
  return out
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter(([id, , status]) => id?.startsWith(PREFIX) && status !== 'STOPPED')
    .map(([id]) => id!);
}

let fencedFor: number | undefined;

async function check(): Promise<void> {
  // Missing, empty or caught mid-write (it is overwritten in place): look again at the next check.
  const deadline = readFenceFile(fenceFile);
  if (deadline === undefined) return;
  if (!Number.isFinite(deadline) || Date.now() < deadline || fencedFor === deadline) return;
  fencedFor = deadline;
  const ids = await running();
  await Promise.all(ids.map((id) => ctr(['task', 'kill', '-s', 'SIGTERM', id])));
  setTimeout(() => void Promise.all(ids.map((id) => ctr(['task', 'kill', '-a', '-s', 'SIGKILL', id]))), killMs);
}

writeFileSync(pidFile, `${process.pid} ${startTimeOf(process.pid)}\n`);
let busy = false;
setInterval(() => {
  if (busy) return;
  busy = true;
  void check().finally(() => (busy = false));
}, 200);
