import type { ServiceSpec } from '../../core/model/index.js';

/** What the runtime saw when the workload ended before or right after it started. */
export interface ExitDetail {
  /** The error of the exec itself (supervisor spawn, runc), when there was one. */
  spawnError?: { errno?: string; message: string };
  /** The last lines the workload (or its shell) wrote to stderr. */
  stderrTail?: string;
  /** The program looked up on the host (process runtime). */
  lookup?: Lookup;
}

/** What a lookup of the program found on the host (process runtime only). */
export type Lookup =
  | { found: false; path: string }
  | { found: true; file: string; executable: boolean; interpreter?: { path: string; exists: boolean } };

/**
 * The one small interface every runtime implements (fake, process, containerd). Nothing in
 * it blocks: start and stop return once the runtime has accepted the request; what happens
 * afterwards (exit, OOM, a vanished supervisor) arrives on the event stream and through
 * inspect/list. A handle is plain JSON, so the agent can persist it and an agent restart can
 * re-adopt the workload from its state directory.
 */
export type RuntimeName = 'fake' | 'process' | 'containerd';

export interface WorkloadHandle {
  runtime: RuntimeName;
  replica: string;
  service: string;
  /** The runtime's own id (container id, supervisor directory name, fake id). */
  id: string;
  /** The image digest the workload runs ('' for the process runtime). */
  image: string;
  startedAt: number;
}

/** A file to place inside the workload (configs and secrets, already written on the host). */
export interface WorkloadFile {
  hostPath: string;
  path: string;
}

/** A local volume to mount into the workload (agent/volumes.ts made `hostPath`). */
export interface WorkloadVolume {
  name: string;
  hostPath: string;
  /** Where the workload sees it: a bind mount (containerd), `$CCA_FILES<path>` and `$CCA_VOLUME_<NAME>` (process). */
  path: string;
  readOnly: boolean;
}

export interface StartRequest {
  replica: string;
  service: string;
  spec: ServiceSpec;
  /** Catalogue digest of spec.image (containerd); '' when the runtime does not use images or will pull it (the handle then gets the pulled digest). */
  image: string;
  /** Environment on top of spec.env (secrets exposed as env vars). Never logged. */
  env: Record<string, string>;
  files: WorkloadFile[];
  /** Local volumes, which outlive the workload. */
  volumes?: WorkloadVolume[];
  /** The replica's directory on the host: logs, files, supervisor state. */
  dir: string;
}

export type RuntimeState = 'pulling' | 'init' | 'starting' | 'running' | 'stopping' | 'exited' | 'lost';

/** Progress of the init steps: the step running, or the last one that succeeded or failed. */
export interface InitProgress {
  step: string;
  state: 'running' | 'succeeded' | 'failed';
  exitCode?: number;
  tail?: string;
  /** Killed at its timeout (exitCode is then the kill's, 137). */
  timedOut?: boolean;
}

export interface PullProgress {
  attempt: number;
  bytes?: number;
  diagnostic?: { code: string; message: string };
}

export interface Usage {
  cpuMillis: number;
  memoryBytes: number;
}

export interface WorkloadStatus {
  handle: WorkloadHandle;
  state: RuntimeState;
  pid?: number;
  exitCode?: number;
  oom?: boolean;
  /** For an exit that may be a command that could not start (a spawn error, code 126/127): what the runtime saw. */
  exitDetail?: ExitDetail;
  /** Why the workload is lost (a coded diagnostic code and message). */
  lost?: { code: string; message: string };
  usage?: Usage;
  init?: InitProgress;
  /** While `pulling`: the attempt, the bytes fetched when known, and why the last attempt failed (a coded diagnostic). */
  pull?: PullProgress;
  /** Where the workload listens, when the runtime knows (its own network namespace, or the host). */
  address?: string;
  /** Port name → port at `address`. */
  ports?: Record<string, number>;
}

export type RuntimeEvent =
  | { kind: 'exited'; replica: string; exitCode: number; oom: boolean; at: number }
  | { kind: 'lost'; replica: string; code: string; message: string; at: number };

export interface Runtime {
  readonly name: RuntimeName;
  /** Images this runtime can run: reference → digest; undefined for a runtime without images. */
  catalogue(): Promise<Record<string, string> | undefined>;
  /** The runtime pulls an image outside its catalogue from the image's registry (containerd) instead of holding the replica. */
  readonly pulls?: boolean;
  start(req: StartRequest): Promise<WorkloadHandle>;
  /** SIGTERM now, SIGKILL of everything the workload started after graceMs; returns at once. */
  stop(handle: WorkloadHandle, graceMs: number): Promise<void>;
  /** Forget an exited workload (container, task, supervisor files). */
  remove(handle: WorkloadHandle): Promise<void>;
  inspect(handle: WorkloadHandle): Promise<WorkloadStatus>;
  /** Every workload this runtime holds for the node, including exited ones not yet removed; usage only when asked. */
  list(opts?: { usage?: boolean }): Promise<WorkloadStatus[]>;
  /** Run a one-shot command inside the workload (exec probes); resolves with its exit code. */
  exec(handle: WorkloadHandle, command: string[], timeoutMs: number): Promise<number>;
  subscribe(listener: (e: RuntimeEvent) => void): () => void;
  close(): Promise<void>;
  /**
   * The replica's output files on this node (current ones, `<file>.1` rotated beside them,
   * agent/logfile.ts), in the order they are served; undefined for a runtime that keeps none.
   */
  logFiles?(replica: string): string[];
}

/** A tiny event fan-out every runtime shares. */
export class Listeners {
  private readonly set = new Set<(e: RuntimeEvent) => void>();

  add(listener: (e: RuntimeEvent) => void): () => void {
    this.set.add(listener);
    return () => this.set.delete(listener);
  }

  emit(e: RuntimeEvent): void {
    for (const l of this.set) l(e);
  }
}

/** The command line a spec asks for: command then args; busybox-style `sh` when both are empty. */
export function argvOf(spec: Pick<ServiceSpec, 'command' | 'args'>): string[] {
  const argv = [...spec.command, ...spec.args];
  return argv.length > 0 ? argv : ['sh'];
}
