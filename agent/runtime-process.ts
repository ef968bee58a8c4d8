import { execFileSync, spawn } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { makeDiagnostic } from '../core/diagnostics/index.js';
import type { NetnsManager } from './netns.js';
import { confinedPath, ensureDirs } from './confine.js';
import { CpuRate, groupUsage, parsePidFile, sameProcessAlive } from './proc.js';
import { DEFAULT_LOG_FILES, DEFAULT_LOG_MAX_BYTES } from './logfile.js';
import { argvOf, Listeners, type ExitDetail, type InitProgress, type Lookup, type Runtime, type RuntimeEvent, type StartRequest, type WorkloadHandle, type WorkloadStatus, type WorkloadVolume } from './runtime.js';
import { volumeEnvName } from './volumes.js';
import { nodeEntry } from './node-entry.js';

export interface ProcessRuntimeOptions {
  /** Where each replica's directory lives: `<root>/<replica>/`. */
  root: string;
  /** The node's fence deadline file, read by every supervisor ('' for none). */
  fenceFile: string;
  fenceKillMs: number;
  /** How often exits and vanished supervisors are noticed. */
  pollMs?: number;
  /**
   * Images this node declares beyond its own: reference → digest (the built catalogue, so
   * the same specs run on both runtimes). Commands run on the host. Always declared: the
   * toolbox image (TOOLBOX_IMAGE: the project's own programs first on PATH, nothing but Node
   * needed); `busybox:1.35` only when the host has busybox (its applets first on PATH).
   */
  catalogue?: Record<string, string>;
  busybox?: string;
  /**
   * Network isolation: each replica in its own network namespace (its own address, the
   * node's policies enforced there). Omitted: host networking.
   */
  network?: NetnsManager;
  /** Cap of each output file (one rotated copy kept): agent/logfile.ts. */
  logMaxBytes?: number;
  /** Rotated files kept per output stream (`--log-files`). */
  logFiles?: number;
}

/**
 * The process runtime has no mount namespace: a volume is its host directory, named by
 * `CCA_VOLUME_<NAME>` and linked at `$CCA_FILES<mountPath>` (where configs are too). Read-only
 * is not enforced here (it is with containerd's bind mount). The link is made strictly below
 * `files/`, its directories without following links (agent/confine.ts): a mount path that
 * would leave it is a Refusal (CCA-E0531).
 */
function volumeMounts(files: string, volumes: readonly WorkloadVolume[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const v of volumes) {
    env[volumeEnvName(v.name)] = v.hostPath;
    const link = confinedPath(files, v.path);
    ensureDirs(files, dirname(link));
    // A link left by an earlier start is replaced (rm removes the link, never its target);
    // anything else there (a config directory) is kept.
    if (isSymlink(link)) rmSync(link, { force: true });
    if (!existsSync(link)) symlinkSync(v.hostPath, link);
  }
  return env;
}

/**
 * The working directory: `$CCA_FILES<workdir>` (made if missing, strictly below `files/` and
 * not through a link), else the replica's directory. Never a host directory of that name:
 * a spec must not choose where on the host its process starts.
 */
function workdirOf(files: string, replicaDir: string, workdir: string | undefined): string {
  if (workdir === undefined) return replicaDir;
  const cwd = confinedPath(files, workdir, { allowRoot: true });
  ensureDirs(files, cwd);
  return cwd;
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}


/** The project's own image: its programs (agent/toolbox/) need only the Node that runs the agent. */
export const TOOLBOX_IMAGE = 'ccattler/toolbox:1';
const TOOLBOX_PROGRAMS = ['httpd'];

/** A shell-quoted word for a generated wrapper script. */
const shellWord = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

interface ExitRecord {
  exitCode: number;
  reason: string;
  message?: string;
  errno?: string;
  at: number;
}

/** The last `bytes` of a file, or '' when it cannot be read. */
function tailOf(file: string, bytes = 2_000): string {
  try {
    const size = statSync(file).size;
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(Math.min(bytes, size));
      readSync(fd, buf, 0, buf.length, size - buf.length);
      return buf.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** Where the program of a workload resolves on the host, and whether it can run (its #! interpreter too). */
export function lookupProgram(program: string, pathEnv: string, cwd: string): Lookup {
  const candidates = program.includes('/') ? [resolve(cwd, program)] : pathEnv.split(':').filter(Boolean).map((d) => join(resolve(cwd, d), program));
  const file = candidates.find((c) => {
    try {
      return statSync(c).isFile();
    } catch {
      return false;
    }
  });
  if (!file) return { found: false, path: program.includes('/') ? dirname(candidates[0] ?? program) : pathEnv };
  let executable = true;
  try {
    accessSync(file, constants.X_OK);
  } catch {
    executable = false;
  }
  const head = tailOfStart(file);
  if (!head.startsWith('#!')) return { found: true, file, executable };
  const [interp = '', arg] = head.slice(2).split('\n')[0]!.trim().split(/\s+/);
  // `#!/usr/bin/env prog`: the interpreter is prog, looked up on the same PATH.
  if (interp.endsWith('/env') && arg && existsSync(interp)) {
    const inner = lookupProgram(arg, pathEnv, cwd);
    return { found: true, file, executable, interpreter: { path: arg, exists: inner.found } };
  }
  return { found: true, file, executable, interpreter: { path: interp, exists: existsSync(interp) } };
}

function tailOfStart(file: string): string {
  try {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(256);
      const n = readSync(fd, buf, 0, 256, 0);
      return buf.subarray(0, n).toString('latin1');
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/**
 * Linux processes, each under its own supervisor (agent/supervisor.ts). All state lives in
 * the replica's directory, so a new ProcessRuntime over the same root re-adopts everything.
 */
export class ProcessRuntime implements Runtime {
  readonly name = 'process' as const;
  private readonly listeners = new Listeners();
  private readonly cpu = new CpuRate();
  /** Replicas whose terminal state was already announced. */
  private readonly announced = new Set<string>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly opts: ProcessRuntimeOptions) {
    mkdirSync(opts.root, { recursive: true });
    this.timer = setInterval(() => this.poll(), opts.pollMs ?? 250);
    this.timer.unref();
  }

  async catalogue(): Promise<Record<string, string> | undefined> {
    const own: Record<string, string> = { [TOOLBOX_IMAGE]: 'process:toolbox' };
    if (existsSync(this.busybox)) own['busybox:1.35'] = 'process:host';
    const built = Object.entries(this.opts.catalogue ?? {}).filter(([ref]) => ref === TOOLBOX_IMAGE || !ref.startsWith('busybox:') || existsSync(this.busybox));
    return { ...own, ...Object.fromEntries(built) };
  }

  /** A directory of wrappers running each toolbox program under this Node, made once per agent start. */
  private toolboxDir(): string {
    const dir = join(this.opts.root, '.toolbox-bin');
    mkdirSync(dir, { recursive: true });
    for (const name of TOOLBOX_PROGRAMS) {
      const node = [process.execPath, ...nodeEntry(import.meta.url, `./toolbox/${name}`)].map(shellWord).join(' ');
      const script = `#!/bin/sh\nexec ${node} "$@"\n`;
      writeFileSync(join(dir, name), script, { mode: 0o755 });
    }
    return dir;
  }

  private get busybox(): string {
    return this.opts.busybox ?? '/usr/bin/busybox';
  }

  /** A directory of busybox applet links, made once, so `httpd`, `wget`… resolve as in the image. */
  private appletDir(): string | undefined {
    if (!existsSync(this.busybox)) return undefined;
    const dir = join(this.opts.root, '.busybox-bin');
    if (existsSync(join(dir, 'sh'))) return dir;
    mkdirSync(dir, { recursive: true });
    const applets = execFileSync(this.busybox, ['--list'], { encoding: 'utf8' }).split('\n').filter((a) => /^[\w.[-]+$/.test(a));
    for (const a of applets) {
      try {
        symlinkSync(this.busybox, join(dir, a));
      } catch {
        // already there
      }
    }
    return dir;
  }

  async start(req: StartRequest): Promise<WorkloadHandle> {
    const dir = join(this.opts.root, req.replica);
    mkdirSync(dir, { recursive: true });
    for (const stale of ['exit.json', 'lost.json', 'workload.pid', 'supervisor.pid', 'stop-grace', 'init.json']) rmSync(join(dir, stale), { force: true });
    const handle: WorkloadHandle = { runtime: 'process', replica: req.replica, service: req.service, id: req.replica, image: req.image, startedAt: Date.now() };
    const files = join(req.dir, 'files');
    mkdirSync(files, { recursive: true, mode: 0o700 });
    const cwd = workdirOf(files, req.dir, req.spec.workdir);
    const hostPath = process.env.PATH ?? '/usr/bin:/bin';
    const applets = req.spec.image === TOOLBOX_IMAGE ? this.toolboxDir() : req.spec.image.startsWith('busybox:') ? this.appletDir() : undefined;
    const env = { PATH: applets ? `${applets}:${hostPath}` : hostPath, HOME: cwd, ...req.spec.env, ...req.env, CCA_REPLICA: req.replica, CCA_SERVICE: req.service, CCA_FILES: files, ...volumeMounts(files, req.volumes ?? []) };
    const init = req.spec.init.map((i) => ({ name: i.name, argv: i.command, env: i.env, timeoutMs: i.timeoutMs }));
    const config = { argv: argvOf(req.spec), env, cwd, graceMs: req.spec.stopGraceMs, fenceFile: this.opts.fenceFile, fenceKillMs: this.opts.fenceKillMs, init, logMaxBytes: this.opts.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES, logFiles: this.opts.logFiles ?? DEFAULT_LOG_FILES };
    writeFileSync(join(dir, 'supervisor.json'), JSON.stringify(config), { mode: 0o600 });
    writeFileSync(join(dir, 'handle.json'), JSON.stringify(handle));
    // In a namespace of its own, the supervisor (and so the workload and its init steps) joins it before it starts.
    if (this.opts.network) await this.opts.network.setup(req.replica, req.spec);
    const argv = [process.execPath, ...nodeEntry(import.meta.url, './supervisor'), dir];
    const [file, ...args] = this.opts.network ? this.opts.network.wrap(req.replica, argv) : argv;
    const sup = spawn(file!, args, { detached: true, stdio: 'ignore', cwd: dir });
    sup.unref();
    this.announced.delete(req.replica);
    return handle;
  }

  async stop(handle: WorkloadHandle, graceMs: number): Promise<void> {
    const dir = join(this.opts.root, handle.replica);
    try {
      writeFileSync(join(dir, 'stop-grace'), String(Math.max(1, graceMs)));
    } catch {
      // A full disk must not keep a workload from stopping: without the file the supervisor
      // takes the spec's grace, and its own fence check shortens it at the deadline.
    }
    const sup = this.pidFile(dir, 'supervisor.pid');
    if (sup && sameProcessAlive(sup)) process.kill(sup.pid, 'SIGTERM');
  }

  async remove(handle: WorkloadHandle): Promise<void> {
    this.cpu.forget(handle.replica);
    this.announced.delete(handle.replica);
    rmSync(join(this.opts.root, handle.replica), { recursive: true, force: true });
    await this.opts.network?.teardown(handle.replica);
  }

  async inspect(handle: WorkloadHandle): Promise<WorkloadStatus> {
    return this.statusOf(handle.replica, handle);
  }

  async list(opts: { usage?: boolean } = {}): Promise<WorkloadStatus[]> {
    const out: WorkloadStatus[] = [];
    for (const replica of readdirSync(this.opts.root)) {
      if (replica.startsWith('.')) continue;
      const handle = this.handleOf(replica);
      if (handle) out.push(this.statusOf(replica, handle, opts.usage ?? true));
    }
    return out;
  }

  async exec(handle: WorkloadHandle, command: string[], timeoutMs: number): Promise<number> {
    const dir = join(this.opts.root, handle.replica);
    const cfg = JSON.parse(readFileSync(join(dir, 'supervisor.json'), 'utf8')) as { env: Record<string, string>; cwd: string };
    const [file, ...args] = this.opts.network ? this.opts.network.wrap(handle.replica, command) : command;
    return new Promise((resolve) => {
      const p = spawn(file ?? 'true', args, { env: cfg.env, cwd: cfg.cwd, stdio: 'ignore', timeout: timeoutMs, killSignal: 'SIGKILL' });
      p.on('error', () => resolve(127));
      p.on('exit', (code) => resolve(code ?? 137));
    });
  }

  subscribe(listener: (e: RuntimeEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
  }

  logFiles(replica: string): string[] {
    return [join(this.opts.root, replica, 'stdout.log'), join(this.opts.root, replica, 'stderr.log')];
  }

  private handleOf(replica: string): WorkloadHandle | undefined {
    try {
      return JSON.parse(readFileSync(join(this.opts.root, replica, 'handle.json'), 'utf8')) as WorkloadHandle;
    } catch {
      return undefined;
    }
  }

  private pidFile(dir: string, name: string): { pid: number; startTime: string } | undefined {
    try {
      return parsePidFile(readFileSync(join(dir, name), 'utf8'));
    } catch {
      return undefined;
    }
  }

  private readJson<T>(dir: string, name: string): T | undefined {
    try {
      return JSON.parse(readFileSync(join(dir, name), 'utf8')) as T;
    } catch {
      return undefined;
    }
  }

  /** Exit recorded, supervisor gone (lost: kill the group once), or running with usage. */
  private statusOf(replica: string, handle: WorkloadHandle, withUsage = true): WorkloadStatus {
    const s = this.bareStatusOf(replica, handle, withUsage);
    const net = this.opts.network?.info(replica);
    return net && s.state !== 'exited' && s.state !== 'lost' ? { ...s, address: net.address, ports: net.ports } : s;
  }

  private bareStatusOf(replica: string, handle: WorkloadHandle, withUsage: boolean): WorkloadStatus {
    const dir = join(this.opts.root, replica);
    if (!existsSync(dir)) return { handle, state: 'lost', lost: diag('CCA-E0503', { replica, runtime: 'process' }) };
    const init = this.readJson<InitProgress>(dir, 'init.json');
    const withInit = init ? { init } : {};
    const exit = this.readJson<ExitRecord>(dir, 'exit.json');
    if (exit) return { handle, state: 'exited', exitCode: exit.exitCode, ...withInit, ...this.exitDetail(dir, exit) };
    const lost = this.readJson<{ code: string; message: string }>(dir, 'lost.json');
    if (lost) return { handle, state: 'lost', lost };
    const sup = this.pidFile(dir, 'supervisor.pid');
    const work = this.pidFile(dir, 'workload.pid');
    if (!sup) {
      // Not yet written: the supervisor is starting (or never started: give it 10 s).
      if (Date.now() - handle.startedAt < 10_000) return { handle, state: 'starting' };
      return this.markLost(dir, handle, work, 0);
    }
    if (!sameProcessAlive(sup)) {
      if (this.readJson<ExitRecord>(dir, 'exit.json')) return this.statusOf(replica, handle);
      return this.markLost(dir, handle, work, sup.pid);
    }
    if (!work) return { handle, state: init?.state === 'running' ? 'init' : 'starting', ...withInit };
    const stopping = existsSync(join(dir, 'stop-grace'));
    if (!withUsage) return { handle, state: stopping ? 'stopping' : 'running', pid: work.pid, ...withInit };
    const u = groupUsage(work.pid);
    const cpuMillis = this.cpu.rate(replica, u.cpuSeconds, Date.now());
    const usage = cpuMillis === undefined ? {} : { usage: { cpuMillis, memoryBytes: u.memoryBytes } };
    return { handle, state: stopping ? 'stopping' : 'running', pid: work.pid, ...usage, ...withInit };
  }

  /** For a spawn failure or a 126/127 exit: the error, stderr's tail and the program looked up as the workload saw it. */
  private exitDetail(dir: string, exit: ExitRecord): { exitDetail?: ExitDetail } {
    const spawnFailed = exit.reason === 'spawn-failed';
    if (!spawnFailed && exit.exitCode !== 126 && exit.exitCode !== 127) return {};
    const cfg = this.readJson<{ argv: string[]; env: Record<string, string>; cwd: string }>(dir, 'supervisor.json');
    const detail: ExitDetail = { stderrTail: tailOf(join(dir, 'stderr.log')) };
    if (spawnFailed) {
      detail.spawnError = { message: exit.message ?? 'spawn failed', ...(exit.errno ? { errno: exit.errno } : {}) };
      if (cfg?.argv[0]) detail.lookup = lookupProgram(cfg.argv[0], cfg.env.PATH ?? '', cfg.cwd);
    }
    return { exitDetail: detail };
  }

  private markLost(dir: string, handle: WorkloadHandle, work: { pid: number; startTime: string } | undefined, supPid: number): WorkloadStatus {
    if (work && sameProcessAlive(work)) {
      try {
        process.kill(-work.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const lost = diag('CCA-E0502', { replica: handle.replica, pid: supPid });
    try {
      writeFileSync(join(dir, 'lost.json'), JSON.stringify(lost));
    } catch {
      // A full disk: reported all the same (once: `announced`); the marker is only for an agent restart.
    }
    return { handle, state: 'lost', lost };
  }

  private poll(): void {
    let names: string[];
    try {
      names = readdirSync(this.opts.root);
    } catch {
      return;
    }
    for (const replica of names) {
      if (this.announced.has(replica)) continue;
      const handle = this.handleOf(replica);
      if (!handle) continue;
      let s: WorkloadStatus;
      try {
        s = this.statusOf(replica, handle, false);
      } catch {
        // This runs from a timer: an error here would end the agent. The next poll looks again.
        continue;
      }
      if (s.state === 'exited') {
        this.announced.add(replica);
        this.listeners.emit({ kind: 'exited', replica, exitCode: s.exitCode ?? 0, oom: false, at: Date.now() });
      } else if (s.state === 'lost' && s.lost) {
        this.announced.add(replica);
        this.listeners.emit({ kind: 'lost', replica, code: s.lost.code, message: s.lost.message, at: Date.now() });
      }
    }
  }
}

function diag(code: string, params: Record<string, string | number>): { code: string; message: string } {
  const d = makeDiagnostic(code, params);
  return { code: d.code, message: d.message };
}
