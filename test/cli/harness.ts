import { afterEach } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { MemoryStore } from '../../db/memory.js';
import { main } from '../../cli/main.js';
import type { Io } from '../../cli/io.js';
import { createApp } from '../../handlers/app.js';
import { ensureTokens } from '../../handlers/auth.js';
import { why } from '../../jobs/decisions/why.js';
import { listen } from '../../handlers/serve.js';
import { ADMIN, testDeps } from '../handlers/harness.js';

export { ADMIN };

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  stdinIsTTY?: boolean;
  stdoutIsTTY?: boolean;
  stderrIsTTY?: boolean;
  /** Answers to confirmation questions, in order. */
  answers?: string[];
  signal?: AbortSignal;
  /** Runs while a confirmation question waits for its answer (someone else acting meanwhile). */
  onPrompt?(): Promise<void>;
  /** Called with the output so far after every write (to stop a watch once enough was seen). */
  onWrite?(out: { stdout: string; stderr: string }): void;
}

/** A state directory per test file, so journals never touch the real home. */
export const stateDir = mkdtempSync(join(tmpdir(), 'cca-cli-state-'));

/** Run `cca ARGV…` in-process with captured output. */
export async function cca(argv: string[], opts: RunOptions = {}): Promise<Run> {
  const out = { stdout: '', stderr: '' };
  const answers = [...(opts.answers ?? [])];
  const io: Io = {
    stdout: { write: (s) => ((out.stdout += s), opts.onWrite?.(out)), isTTY: opts.stdoutIsTTY ?? false },
    stderr: { write: (s) => ((out.stderr += s), opts.onWrite?.(out)), isTTY: opts.stderrIsTTY ?? false },
    stdinIsTTY: opts.stdinIsTTY ?? false,
    prompt: async (q) => {
      out.stderr += q;
      await opts.onPrompt?.();
      return answers.shift() ?? '';
    },
    // No local system (`npm start`'s .ccattler/local.json) unless a test names one: the checkout's own must not leak in.
    env: { HOME: stateDir, CCA_STATE_DIR: stateDir, CCA_HOME: join(stateDir, 'no-local-system'), ...(opts.env ?? {}) },
    cwd: opts.cwd ?? process.cwd(),
    signal: opts.signal ?? new AbortController().signal,
    now: () => Date.UTC(2026, 10, 29, 10, 0, 0),
  };
  const code = await main(argv, io);
  return { code, ...out };
}

export interface Live {
  url: string;
  store: MemoryStore;
  /** Every X-Request-Id the server saw, in order. */
  requestIds: string[];
  close(): Promise<void>;
  /** `cca` with --server and --token for this server. */
  run(argv: string[], opts?: RunOptions): Promise<Run>;
}

/** Live servers for one test file: the function returned starts one, closed after each test. */
export function liveServers(): () => Promise<Live> {
  const opened: Live[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((l) => l.close()));
  });
  return async () => {
    const l = await liveServer();
    opened.push(l);
    return l;
  };
}

/** A real HTTP server on a free port: the API app with known tokens, closed reads, and `why`. */
export async function liveServer(): Promise<Live> {
  const store = new MemoryStore();
  await ensureTokens(store, { admin: ADMIN });
  // The real `why` (jobs/decisions/why.ts), injected as the server's composition root does.
  const deps = testDeps(store, { auth: { openReads: false }, why: (kind, name) => why(store, kind, name) });
  const app = createApp(deps);
  const requestIds: string[] = [];
  const wrapped = { fetch: (req: Request) => (requestIds.push(req.headers.get('x-request-id') ?? ''), app.fetch(req)) };
  const http = await listen(wrapped as unknown as typeof app, { port: 0 });
  return {
    url: http.url,
    store,
    requestIds,
    close: () => http.close(),
    run: (argv, opts) => cca([...argv, '--server', http.url, '--token', ADMIN], opts),
  };
}

const T0 = Date.UTC(2026, 10, 29, 9, 0, 0);
export const at = (seconds: number) => T0 + seconds * 1000;

/** Facts as the controllers and agents would write them, for tables and waits. */
export async function seedNode(store: MemoryStore, name: string, zone: string, cpuMillis: number, state: 'ready' | 'lost' | 'unreachable' = 'ready'): Promise<number> {
  await store.put(buildKey('node', name), encodeFact('node', { name, zone, capacity: { cpuMillis, memoryBytes: 2 ** 30 }, labels: { disk: 'ssd' }, runtime: 'fake' }));
  const tenure = (await store.get(buildKey('node', name)))!.createRevision;
  await store.put(buildKey('nodeStatus', name), encodeFact('nodeStatus', { node: name, tenure, state, since: at(1) }));
  return tenure;
}

export async function seedReplica(
  store: MemoryStore,
  spec: { service: string; id: string; node?: string; tenure?: number; state?: 'running' | 'starting'; ready?: boolean },
): Promise<void> {
  const { service, id } = spec;
  await store.put(buildKey('replica', service, id), encodeFact('replica', { id, service, specRevision: 1, desired: 'run', createdAt: at(2), reason: spec.node ? '' : 'waiting for a node that fits' }));
  if (!spec.node) return;
  const svc = decodeFact('service', buildKey('service', service), (await store.get(buildKey('service', service)))!.value);
  const tenure = spec.tenure ?? 0;
  await store.put(
    buildKey('assigned', spec.node, id),
    encodeFact('assigned', { replica: id, service, node: spec.node, tenure, resources: { cpuMillis: 250, memoryBytes: 64 * 2 ** 20 }, specRevision: 1, spec: svc, placedAt: at(3) }),
  );
  if (spec.state) {
    await store.put(
      buildKey('observed', spec.node, id),
      encodeFact('observed', {
        replica: id,
        service,
        node: spec.node,
        tenure,
        state: spec.state,
        health: { liveness: 'passing', readiness: spec.ready ? 'passing' : 'unknown' },
        // The manifest digest the node resolved busybox:1.35 to (shown by `get replicas -o wide`).
        image: `sha256:${'1f3a'.repeat(16)}`,
        at: at(4),
      }),
    );
  }
}

export async function seedAllocation(store: MemoryStore, node: string, tenure: number, replicas: string[]): Promise<void> {
  await store.put(buildKey('allocation', node), encodeFact('allocation', { node, tenure, used: { cpuMillis: 250 * replicas.length, memoryBytes: 64 * 2 ** 20 * replicas.length }, replicas }));
}

/** A URL nothing listens on: a port that was free a moment ago. */
export async function closedUrl(): Promise<string> {
  const { createServer } = await import('node:net');
  const srv = createServer();
  const port = await new Promise<number>((resolve) => srv.listen(0, '127.0.0.1', () => resolve((srv.address() as { port: number }).port)));
  await new Promise((r) => srv.close(r));
  return `http://127.0.0.1:${port}`;
}
