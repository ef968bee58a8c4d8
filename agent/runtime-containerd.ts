import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { makeDiagnostic, messageOf } from '../core/diagnostics/index.js';

import { Refusal } from './confine.js';
import { Ctr, parseEventLine } from './containerd/ctr.js';
import { PullFailure, pullImage } from './containerd/pull.js';
import type { NetnsManager } from './netns.js';
import { readCatalogue, type Catalogue, type CatalogueEntry } from './images.js';
import { CpuRate, parsePidFile, sameProcessAlive } from './proc.js';
import { capAppendedLog, DEFAULT_LOG_FILES, DEFAULT_LOG_MAX_BYTES } from './logfile.js';
import { nodeEntry } from './node-entry.js';
import { argvOf, Listeners, type InitProgress, type PullProgress, type Runtime, type RuntimeEvent, type StartRequest, type Usage, type WorkloadHandle, type WorkloadStatus } from './runtime.js';

export interface ContainerdRuntimeOptions {
  address: string;
  /** One namespace per node. */
  namespace: string;
  /** Replica directories (handle, exit record, logs, files). */
  root: string;
  /** Directory holding catalogue.json and the OCI archives it names. */
  imagesDir: string;
  /** A static tini bind-mounted as PID 1 (busybox sh/httpd as PID 1 ignore SIGTERM). */
  tini?: string;
  ctr?: string;
  cgroupRoot?: string;
  /** The node's fence deadline file: a detached fencer stops the containers when it passes. */
  fence?: { file: string; killMs: number; pidFile: string };
  /** The node's name, for the diagnostics of a failed pull (default: the namespace). */
  node?: string;
  /** Registries (host or host:port) pulled from over plain HTTP (`cca agent --insecure-registry`). */
  insecureRegistries?: string[];
  /** Backoff between pull attempts: first and longest wait (default 1 s, 30 s). */
  pullBackoffMs?: { first: number; max: number };
  /** Network isolation: each replica's containers join a namespace the agent made (`ctr run --with-ns`). Omitted: host networking. */
  network?: NetnsManager;
  /** Cap of each replica's stdout.log (one rotated copy kept): agent/logfile.ts. */
  logMaxBytes?: number;
  /** Rotated files kept per output stream (`--log-files`). */
  logFiles?: number;
}


const PREFIX = 'cca-';

/**
 * Real containers through the `ctr` CLI (docs/agent.md says why not gRPC). Host networking
 * (or, with `network`, a namespace per replica that the agent made: docs/network.md),
 * memory and CPU limits from the spec, tini as PID 1, logs to a file, exits and OOMs from
 * `ctr events`, usage from the container's cgroup. The containerd shim is each container's
 * supervisor: it outlives the agent, and a new runtime re-adopts from `ctr task ls` plus the
 * replica directories.
 */
export class ContainerdRuntime implements Runtime {
  readonly name = 'containerd' as const;
  /** An image outside the catalogue is pulled from its registry. */
  readonly pulls = true;
  readonly ctr: Ctr;
  private readonly listeners = new Listeners();
  private readonly cpu = new CpuRate();
  private readonly oom = new Set<string>();
  private readonly initializing = new Set<string>();
  /** Replicas whose images are being pulled (state `pulling`); the attempt loop is in pullThenRun. */
  private readonly pulling = new Set<string>();
  private readonly stopRequested = new Set<string>();
  private readonly recentExits = new Map<string, { exitCode: number; at: number }>();
  private readonly killTimers = new Map<string, ReturnType<typeof setTimeout>>();
  private events: ChildProcess | undefined;
  private closed = false;
  private execSeq = 0;
  private readonly imports = new Map<string, Promise<void>>();

  constructor(private readonly opts: ContainerdRuntimeOptions) {
    this.ctr = new Ctr(opts.address, opts.namespace, opts.ctr);
    mkdirSync(opts.root, { recursive: true });
    this.watchEvents();
    this.ensureFencer();
    this.logTimer = setInterval(() => this.capLogs(), 1_000);
    this.logTimer.unref();
  }

  private readonly logTimer: NodeJS.Timeout;
  private readonly logSizes = new Map<string, number>();

  /**
   * The shim appends the container's output to stdout.log itself (`--log-uri file://`), and
   * outlives the agent, so the cap is applied from here, every second: see capAppendedLog.
   * While no agent runs, nothing caps the file.
   */
  private capLogs(): void {
    let replicas: string[];
    try {
      replicas = readdirSync(this.opts.root);
    } catch {
      return;
    }
    const now = Date.now();
    for (const r of replicas) {
      const file = join(this.opts.root, r, 'stdout.log');
      try {
        const size = capAppendedLog(file, this.opts.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES, now, this.logSizes.get(file), this.opts.logFiles ?? DEFAULT_LOG_FILES);
        if (size < 0) this.logSizes.delete(file);
        else this.logSizes.set(file, size);
      } catch {
        // The replica was removed meanwhile.
        this.logSizes.delete(file);
      }
    }
  }

  logFiles(replica: string): string[] {
    return [join(this.opts.root, replica, 'stdout.log')];
  }

  /** Start the node's fencer unless one (from an earlier agent) is still running. */
  private ensureFencer(): void {
    const f = this.opts.fence;
    if (!f || this.fencerPid() !== undefined) return;
    const args = [...nodeEntry(import.meta.url, './containerd/fencer'), this.opts.ctr ?? 'ctr', this.opts.address, this.opts.namespace, f.file, String(f.killMs), f.pidFile];
    spawn(process.execPath, args, { detached: true, stdio: 'ignore' }).unref();
  }

  fencerPid(): number | undefined {
    if (!this.opts.fence) return undefined;
    try {
      const p = parsePidFile(readFileSync(this.opts.fence.pidFile, 'utf8'));
      return p && sameProcessAlive(p) ? p.pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** Stop the fencer (tests, and decommissioning a node); an agent restart leaves it running. */
  stopFencer(): void {
    const pid = this.fencerPid();
    if (pid !== undefined) process.kill(pid, 'SIGTERM');
  }

  async catalogue(): Promise<Record<string, string>> {
    return Object.fromEntries(Object.entries(this.readCatalogue()).map(([ref, e]) => [ref, e.digest]));
  }

  async start(req: StartRequest): Promise<WorkloadHandle> {
    // Refuse unsafe mounts before any container (an init step's included) exists.
    this.mountArgs(req);
    const id = PREFIX + req.replica;
    const dir = join(this.opts.root, req.replica);
    const images = [req.spec.image, ...req.spec.init.map((s) => s.image ?? req.spec.image)];
    const toPull = images.some((i) => this.readCatalogue()[i] === undefined);
    // Catalogue images are imported before start() returns, as before; a pull may take minutes
    // and fail for a while (registry down), so it runs behind start(), reported as `pulling`.
    const local = toPull ? undefined : this.entryOf(req.spec.image);
    if (local) await this.ensureImage(local.name, join(this.opts.imagesDir, local.archive));
    mkdirSync(dir, { recursive: true });
    for (const stale of ['exit.json', 'init.json', 'init.log', 'pull.json']) rmSync(join(dir, stale), { force: true });
    const handle: WorkloadHandle = { runtime: 'containerd', replica: req.replica, service: req.service, id, image: req.image, startedAt: Date.now() };
    writeFileSync(join(dir, 'handle.json'), JSON.stringify(handle));
    // The namespace (address, route, default-deny table) exists before any container of the replica runs.
    if (this.opts.network) await this.opts.network.setup(req.replica, req.spec);
    if (!local) {
      this.pulling.add(id);
      void this.pullThenRun(req, handle).finally(() => this.pulling.delete(id));
      return handle;
    }
    if (req.spec.init.length === 0) {
      await this.runContainer(req, local.name, id, argvOf(req.spec), { detach: true });
      return handle;
    }
    // Init steps run one after another, each its own container, before the main one; start()
    // returns at once and progress shows in init.json (state `init`).
    this.initializing.add(id);
    void this.runInit(req, handle, local.name).finally(() => this.initializing.delete(id));
    return handle;
  }

  /** The containerd name and digest of an image: imported from the catalogue, or pulled from its registry. */
  private async obtain(image: string, req: StartRequest, onProgress: (bytes: number) => void): Promise<{ name: string; digest: string }> {
    const entry = this.readCatalogue()[image];
    if (entry) {
      await this.ensureImage(entry.name, join(this.opts.imagesDir, entry.archive));
      return { name: entry.name, digest: entry.digest };
    }
    const pull = req.spec.pull;
    const secret = pull?.secret === undefined ? undefined : req.spec.secrets.find((s) => s.name === pull.secret);
    return pullImage(this.ctr, {
      image,
      replica: req.replica,
      service: req.service,
      node: this.opts.node ?? this.opts.namespace,
      policy: pull?.policy ?? 'if-missing',
      // A secret the spec does not declare is refused at apply (CCA-E0556); here it pulls anonymously.
      ...(secret ? { secret: { name: secret.name, value: secret.value } } : {}),
      insecure: this.opts.insecureRegistries ?? [],
      onProgress,
    });
  }

  /**
   * Pull every image the replica needs, retrying with backoff (1 s doubling to 30 s) until it
   * works or the replica is stopped; each failed attempt's diagnostic shows on the replica
   * (pull.json). Then the handle gets the main image's digest and the replica runs.
   */
  private async pullThenRun(req: StartRequest, handle: WorkloadHandle): Promise<void> {
    const dir = join(this.opts.root, req.replica);
    const backoff = this.opts.pullBackoffMs ?? { first: 1_000, max: 30_000 };
    let progress: PullProgress = { attempt: 1 };
    const write = (p: PullProgress) => {
      progress = p;
      if (existsSync(dir)) writeFileSync(join(dir, 'pull.json'), JSON.stringify(p));
    };
    write(progress);
    let main: { name: string; digest: string } | undefined;
    const pulled = new Map<string, string>();
    for (let wait = backoff.first; ; wait = Math.min(wait * 2, backoff.max)) {
      if (this.stopRequested.has(handle.id)) return this.finishInit(handle, 143, false);
      try {
        for (const image of new Set([req.spec.image, ...req.spec.init.map((s) => s.image ?? req.spec.image)])) {
          const got = await this.obtain(image, req, (bytes) => write({ ...progress, bytes }));
          pulled.set(image, got.name);
          main ??= got;
        }
        break;
      } catch (e) {
        const d = e instanceof PullFailure ? e.diagnostic : makeDiagnostic('CCA-E0554', { node: this.opts.node ?? this.opts.namespace, image: req.spec.image, replica: req.replica, reason: messageOf(e) });
        main = undefined;
        write({ attempt: progress.attempt, diagnostic: { code: d.code, message: d.message } });
        await this.pause(handle.id, wait);
        write({ attempt: progress.attempt + 1, ...(progress.diagnostic ? { diagnostic: progress.diagnostic } : {}) });
      }
    }
    if (!main) return;
    rmSync(join(dir, 'pull.json'), { force: true });
    const pinned: WorkloadHandle = { ...handle, image: main.digest };
    writeFileSync(join(dir, 'handle.json'), JSON.stringify(pinned));
    if (this.stopRequested.has(handle.id)) return this.finishInit(handle, 143, false);
    if (req.spec.init.length > 0) {
      this.initializing.add(handle.id);
      return this.runInit(req, pinned, main.name, pulled).finally(() => this.initializing.delete(handle.id));
    }
    try {
      await this.runContainer(req, main.name, handle.id, argvOf(req.spec), { detach: true });
    } catch (e) {
      // start() has returned: the failure reaches the agent as an exit with the reason in init.json.
      const reason = messageOf(e);
      writeFileSync(join(dir, 'init.json'), JSON.stringify({ step: 'start', state: 'failed', exitCode: 127, tail: reason } satisfies InitProgress));
      this.finishInit(handle, 127, true);
    }
  }

  /** Wait between pull attempts; a stop ends the wait early. */
  private async pause(id: string, ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until && !this.stopRequested.has(id) && !this.closed) await new Promise((r) => setTimeout(r, Math.min(200, until - Date.now())));
  }

  private entryOf(image: string): CatalogueEntry {
    const entry = this.readCatalogue()[image];
    if (!entry) throw new Error(`image ${image} is not in the catalogue`);
    return entry;
  }

  /** `pulled`: image reference → containerd name of the images pullThenRun fetched (the others come from the catalogue). */
  private async runInit(req: StartRequest, handle: WorkloadHandle, mainImage: string, pulled = new Map<string, string>()): Promise<void> {
    const dir = join(this.opts.root, req.replica);
    const writeInit = (p: InitProgress) => writeFileSync(join(dir, 'init.json'), JSON.stringify(p));
    try {
      for (const step of req.spec.init) {
        if (this.stopRequested.has(handle.id)) return this.finishInit(handle, 143, false);
        writeInit({ step: step.name, state: 'running' });
        const stepImage = step.image ?? req.spec.image;
        let name = pulled.get(stepImage);
        if (name === undefined) {
          const entry = this.entryOf(stepImage);
          await this.ensureImage(entry.name, join(this.opts.imagesDir, entry.archive));
          name = entry.name;
        }
        const stepId = `${handle.id}-init-${step.name}`;
        const r = await this.runContainer({ ...req, spec: { ...req.spec, env: { ...req.spec.env, ...step.env } } }, name, stepId, step.command, { detach: false, timeoutMs: step.timeoutMs });
        await this.forget(stepId);
        // Each step's output, in order, beside the main container's log.
        appendFileSync(join(dir, 'init.log'), `--- init ${step.name} (${r.code === -1 ? 'timed out' : `code ${r.code}`})\n${r.stdout}${r.stderr}`);
        if (this.stopRequested.has(handle.id)) return this.finishInit(handle, 143, false);
        if (r.code !== 0) {
          const timedOut = r.code === -1 ? `\n(init step ${step.name} timed out after ${step.timeoutMs} ms)` : '';
          const exitCode = r.code === -1 ? 137 : r.code;
          writeInit({ step: step.name, state: 'failed', exitCode, tail: (r.stdout + r.stderr + timedOut).slice(-2_000), ...(r.code === -1 ? { timedOut: true } : {}) });
          return this.finishInit(handle, exitCode, true);
        }
        writeInit({ step: step.name, state: 'succeeded', exitCode: 0, tail: '' });
      }
      await this.runContainer(req, mainImage, handle.id, argvOf(req.spec), { detach: true });
    } catch (e) {
      writeInit({ step: 'init', state: 'failed', exitCode: 127, tail: messageOf(e) });
      this.finishInit(handle, 127, true);
    }
  }

  private finishInit(handle: WorkloadHandle, exitCode: number, failed: boolean): void {
    this.stopRequested.delete(handle.id);
    this.recordExit(handle.replica, exitCode, false);
    this.listeners.emit({ kind: 'exited', replica: handle.replica, exitCode: failed ? exitCode : 143, oom: false, at: Date.now() });
  }

  /**
   * Every `--mount` of a replica's containers: tini, configs and secrets read-only, volumes
   * (the node's directory, bind-mounted; it outlives the container). Throws a Refusal
   * (CCA-E0531) before anything runs when a path could not be passed safely: see bindMount.
   */
  private mountArgs(req: StartRequest): string[] {
    const tini = this.opts.tini ?? '/usr/bin/tini-static';
    return [
      ...bindMount(tini, '/.cca-tini', 'ro'),
      ...req.files.flatMap((f) => bindMount(f.hostPath, f.path, 'ro')),
      ...(req.volumes ?? []).flatMap((v) => bindMount(v.hostPath, v.path, v.readOnly ? 'ro' : 'rw')),
    ];
  }

  /** `ctr run` one container (detached, or in the foreground with a timeout for init steps). */
  private async runContainer(req: StartRequest, image: string, id: string, argv: string[], how: { detach: boolean; timeoutMs?: number }): Promise<{ code: number; stdout: string; stderr: string }> {
    const dir = join(this.opts.root, req.replica);
    const envFile = join(dir, `.env-${id}`);
    const env = { ...req.spec.env, ...req.env, CCA_REPLICA: req.replica, CCA_SERVICE: req.service };
    writeFileSync(envFile, Object.entries(env).map(([k, v]) => `${k}=${v.replace(/\n/g, ' ')}`).join('\n') + '\n', { mode: 0o600 });
    const args = [
      'run', ...(how.detach ? ['-d', '--log-uri', `file://${join(dir, 'stdout.log')}`] : ['--rm']),
      ...(this.opts.network ? ['--with-ns', `network:${this.opts.network.netnsPath(req.replica)}`] : ['--net-host']),
      '--memory-limit', String(req.spec.resources.memoryBytes),
      '--cpus', String(req.spec.resources.cpuMillis / 1000),
      '--label', `cca.replica=${req.replica}`, '--label', `cca.service=${req.service}`,
      '--env-file', envFile,
      ...this.mountArgs(req),
      ...(req.spec.workdir === undefined ? [] : ['--cwd', req.spec.workdir]),
      image, id, '/.cca-tini', '-g', '-s', '--', ...argv,
    ];
    try {
      if (!how.detach) {
        const r = await this.ctr.run(args, { allowFail: true, timeoutMs: how.timeoutMs ?? 60_000 });
        if (r.code === 'timeout') await this.ctr.run(['task', 'kill', '-a', '-s', 'SIGKILL', id], { allowFail: true });
        return { ...r, code: r.code === 'timeout' ? -1 : r.code };
      }
      await this.ctr.run(args).catch(async (e: Error) => {
        if (!/already exists/.test(e.message)) throw e;
        await this.forget(id); // a leftover of an earlier attempt at this replica
        await this.ctr.run(args);
      });
      return { code: 0, stdout: '', stderr: '' };
    } finally {
      rmSync(envFile, { force: true });
    }
  }

  async stop(handle: WorkloadHandle, graceMs: number): Promise<void> {
    if (this.pulling.has(handle.id)) {
      // The attempt loop sees it between attempts (or after the pull in flight) and records the exit.
      this.stopRequested.add(handle.id);
      return;
    }
    if (this.initializing.has(handle.id)) {
      this.stopRequested.add(handle.id);
      const steps = [...(await this.ctr.tasks()).keys()].filter((t) => t.startsWith(`${handle.id}-init-`));
      await Promise.all(steps.map((t) => this.ctr.run(['task', 'kill', '-a', '-s', 'SIGKILL', t], { allowFail: true })));
      return;
    }
    await this.ctr.run(['task', 'kill', '-s', 'SIGTERM', handle.id], { allowFail: true });
    const t = setTimeout(() => {
      this.killTimers.delete(handle.id);
      void this.ctr.run(['task', 'kill', '-a', '-s', 'SIGKILL', handle.id], { allowFail: true });
    }, graceMs);
    t.unref();
    this.killTimers.set(handle.id, t);
  }

  async remove(handle: WorkloadHandle): Promise<void> {
    await this.forget(handle.id);
    this.cpu.forget(handle.id);
    rmSync(join(this.opts.root, handle.replica), { recursive: true, force: true });
    await this.opts.network?.teardown(handle.replica);
  }

  async inspect(handle: WorkloadHandle): Promise<WorkloadStatus> {
    const [tasks, containers] = await Promise.all([this.ctr.tasks(), this.ctr.containers()]);
    return this.statusOf(handle, tasks, containers, true);
  }

  async list(opts: { usage?: boolean } = {}): Promise<WorkloadStatus[]> {
    const [tasks, containers] = await Promise.all([this.ctr.tasks(), this.ctr.containers()]);
    const out: WorkloadStatus[] = [];
    for (const replica of readdirSync(this.opts.root)) {
      const handle = this.readJson<WorkloadHandle>(replica, 'handle.json');
      if (handle) out.push(await this.statusOf(handle, tasks, containers, opts.usage ?? true));
    }
    return out;
  }

  async exec(handle: WorkloadHandle, command: string[], timeoutMs: number): Promise<number> {
    const r = await this.ctr.run(['task', 'exec', '--exec-id', `probe-${process.pid}-${++this.execSeq}`, handle.id, ...command], { timeoutMs, allowFail: true });
    return r.code === 'timeout' ? 137 : r.code;
  }

  subscribe(listener: (e: RuntimeEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.logTimer);
    for (const t of this.killTimers.values()) clearTimeout(t);
    this.events?.kill('SIGTERM');
  }

  /** The cgroup (v1 or v2) files of a container, for usage and for tests checking limits. */
  cgroupFile(handle: WorkloadHandle, controller: 'memory' | 'cpu' | 'cpuacct', file: string): string {
    const root = this.opts.cgroupRoot ?? '/sys/fs/cgroup';
    const v1 = join(root, controller, this.opts.namespace, handle.id, file);
    return existsSync(join(root, controller)) ? v1 : join(root, this.opts.namespace, handle.id, file);
  }

  private readCatalogue(): Catalogue {
    return readCatalogue(this.opts.imagesDir);
  }

  /** Import the image's archive once (concurrent starts share the import). */
  private ensureImage(name: string, archive: string): Promise<void> {
    let p = this.imports.get(name);
    if (!p) {
      p = (async () => {
        if ((await this.ctr.images()).has(name)) return;
        const base = name.replace(/:[^:/]+$/, '');
        await this.ctr.run(['images', 'import', '--base-name', base, archive], { timeoutMs: 120_000 });
        if (!(await this.ctr.images()).has(name)) throw new Error(`importing ${archive} did not produce ${name}`);
      })();
      p.catch(() => this.imports.delete(name));
      this.imports.set(name, p);
    }
    return p;
  }

  private async forget(id: string): Promise<void> {
    const t = this.killTimers.get(id);
    if (t) clearTimeout(t);
    this.killTimers.delete(id);
    await this.ctr.run(['task', 'delete', '-f', id], { allowFail: true });
    await this.ctr.run(['containers', 'delete', id], { allowFail: true });
  }

  private readJson<T>(replica: string, name: string): T | undefined {
    try {
      return JSON.parse(readFileSync(join(this.opts.root, replica, name), 'utf8')) as T;
    } catch {
      return undefined;
    }
  }

  private async statusOf(given: WorkloadHandle, tasks: Map<string, { pid: number; status: string }>, containers: Set<string>, withUsage: boolean): Promise<WorkloadStatus> {
    // A pulled image's digest is known only after the pull: handle.json holds it from then on.
    const stored = this.readJson<WorkloadHandle>(given.replica, 'handle.json');
    const handle = stored?.id === given.id ? stored : given;
    const s = await this.bareStatusOf(handle, tasks, containers, withUsage);
    const net = this.opts.network?.info(handle.replica);
    return net && s.state !== 'exited' && s.state !== 'lost' ? { ...s, address: net.address, ports: net.ports } : s;
  }

  private async bareStatusOf(handle: WorkloadHandle, tasks: Map<string, { pid: number; status: string }>, containers: Set<string>, withUsage: boolean): Promise<WorkloadStatus> {
    const init = this.readJson<InitProgress>(handle.replica, 'init.json');
    const withInit = init ? { init } : {};
    const exit = this.readJson<{ exitCode: number; oom: boolean }>(handle.replica, 'exit.json');
    if (exit) return { handle, state: 'exited', exitCode: exit.exitCode, oom: exit.oom, ...withInit };
    if (this.pulling.has(handle.id)) return { handle, state: 'pulling', pull: this.readJson<PullProgress>(handle.replica, 'pull.json') ?? { attempt: 1 } };
    if (this.initializing.has(handle.id)) return { handle, state: 'init', ...withInit };
    const task = tasks.get(handle.id);
    if (task?.status === 'STOPPED') {
      // It exited while nobody listened (agent down): containerd kept the code.
      const exitCode = (await this.ctr.deleteTask(handle.id)) ?? 255;
      this.recordExit(handle.replica, exitCode, false);
      return { handle, state: 'exited', exitCode, ...withInit };
    }
    if (!task) {
      if (!containers.has(handle.id) && Date.now() - handle.startedAt > 30_000) {
        const d = makeDiagnostic('CCA-E0503', { replica: handle.replica, runtime: 'containerd' });
        return { handle, state: 'lost', lost: { code: d.code, message: d.message } };
      }
      return { handle, state: 'starting', ...withInit };
    }
    const state = this.killTimers.has(handle.id) ? 'stopping' : task.status === 'CREATED' ? 'starting' : 'running';
    return { handle, state, pid: task.pid, ...withInit, ...(withUsage ? { usage: this.usage(handle) } : {}) };
  }

  private usage(handle: WorkloadHandle): Usage | undefined {
    try {
      const v1 = existsSync(join(this.opts.cgroupRoot ?? '/sys/fs/cgroup', 'memory'));
      const memoryBytes = Number(readFileSync(this.cgroupFile(handle, 'memory', v1 ? 'memory.usage_in_bytes' : 'memory.current'), 'utf8'));
      const cpuSeconds = v1
        ? Number(readFileSync(this.cgroupFile(handle, 'cpuacct', 'cpuacct.usage'), 'utf8')) / 1e9
        : Number(/usage_usec (\d+)/.exec(readFileSync(this.cgroupFile(handle, 'cpuacct', 'cpu.stat'), 'utf8'))?.[1] ?? 0) / 1e6;
      // No rate before two readings: a container that just started reports no usage, not a false 0.
      const cpuMillis = this.cpu.rate(handle.id, cpuSeconds, Date.now());
      return cpuMillis === undefined ? undefined : { cpuMillis, memoryBytes };
    } catch {
      return undefined;
    }
  }

  private recordExit(replica: string, exitCode: number, oom: boolean): void {
    const dir = join(this.opts.root, replica);
    if (existsSync(dir)) writeFileSync(join(dir, 'exit.json'), JSON.stringify({ exitCode, oom, at: Date.now() }));
  }

  /** Follow `ctr events` for exits and OOMs; restarted if it dies. */
  private watchEvents(): void {
    if (this.closed) return;
    const child = spawn(this.opts.ctr ?? 'ctr', ['-a', this.opts.address, 'events'], { stdio: ['ignore', 'pipe', 'ignore'] });
    this.events = child;
    createInterface({ input: child.stdout! }).on('line', (line) => this.onEventLine(line));
    child.on('exit', () => {
      if (!this.closed) setTimeout(() => this.watchEvents(), 500).unref();
    });
    child.on('error', () => undefined);
  }

  private onEventLine(line: string): void {
    const e = parseEventLine(line);
    if (!e || e.namespace !== this.opts.namespace) return;
    const id = String(e.event.container_id ?? '');
    if (!id.startsWith(PREFIX)) return;
    const replica = id.slice(PREFIX.length);
    if (e.topic === '/tasks/oom') {
      // The OOM event may come just after the exit it caused: correct that exit.
      const recent = this.recentExits.get(id);
      if (recent && Date.now() - recent.at < 5_000) {
        this.recentExits.delete(id);
        this.recordExit(replica, recent.exitCode, true);
        this.listeners.emit({ kind: 'exited', replica, exitCode: recent.exitCode, oom: true, at: Date.now() });
      } else {
        this.oom.add(id);
      }
    }
    if (e.topic !== '/tasks/exit' || e.event.id !== id) return;
    const exitCode = Number(e.event.exit_status ?? 0);
    const oom = this.oom.delete(id);
    const t = this.killTimers.get(id);
    if (t) clearTimeout(t);
    this.killTimers.delete(id);
    this.recordExit(replica, exitCode, oom);
    for (const [k, v] of this.recentExits) if (Date.now() - v.at > 5_000) this.recentExits.delete(k);
    if (!oom) this.recentExits.set(id, { exitCode, at: Date.now() });
    void this.ctr.deleteTask(id);
    this.listeners.emit({ kind: 'exited', replica, exitCode, oom, at: Date.now() });
  }
}

/**
 * Characters that would change how `ctr run --mount` reads its value: ctr 1.6 parses it as
 * one CSV record (`,` separates fields, `"` quotes, a line break ends the record) of
 * `key=value` fields, and a repeated `src=` wins, so `dst=/data,src=/` would mount the host's
 * root. `=` cannot split a field twice (ctr splits at the first), but it is refused too:
 * nothing we mount needs it.
 */
// The C0 controls (line breaks among them) and DEL.
const MOUNT_UNSAFE = /[,"=\u0000-\u001f\u007f]/;

/**
 * One bind mount as `ctr run --mount` arguments, refusing (CCA-E0531) a source or
 * destination that could inject fields. Why not a structured mount: ctr 1.6's only
 * structured form is `ctr run --config <OCI spec>`, and with `--config` ctr ignores every
 * other flag (image and snapshot, env file, cwd, limits, namespaces, labels), so the agent
 * would have to generate the whole runtime spec and prepare the rootfs itself; containerd's
 * gRPC API would take `Mount` messages, but the agent drives containerd through `ctr`
 * (docs/agent.md says why). The model refuses these characters at apply (CCA-E0325); this
 * is the agent's own check for a spec that did not come through it.
 */
export function bindMount(src: string, dst: string, access: 'ro' | 'rw'): string[] {
  for (const [what, value] of [['source', src], ['destination', dst]] as const) {
    const bad = MOUNT_UNSAFE.exec(value);
    if (bad) throw new Refusal(`the mount ${what} ${JSON.stringify(value)} contains ${JSON.stringify(bad[0])}, which ctr's --mount syntax would read as structure`);
  }
  if (!dst.startsWith('/')) throw new Refusal(`the mount destination ${JSON.stringify(dst)} is not absolute`);
  return ['--mount', `type=bind,src=${src},dst=${dst},options=rbind:${access}`];
}
