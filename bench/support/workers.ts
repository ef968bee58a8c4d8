import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { onInterrupt } from './cleanup.js';
import { sleep } from './usage.js';

/** The environment variable a worker reads its settings from (JSON, checked by the worker). */
export const WORKER_CONFIG = 'CCA_BENCH_WORKER';

/**
 * Load-generator processes: the benchmark's load runs in children of its own, so the pod's
 * figures are not the generator's queueing. Each child is `script` through tsx with its
 * settings as JSON in CCA_BENCH_WORKER and an IPC channel for its messages.
 */
export class Workers<M extends { type: string }> {
  readonly children: ChildProcess[] = [];
  private readonly inbox: { from: number; msg: M }[] = [];
  private readonly waiting = new Set<() => void>();
  /** Each worker's newest `vitals` message, if it sends them. */
  private readonly latestVitals: (M | undefined)[] = [];

  private readonly forget: () => void;

  constructor(script: string, configs: readonly unknown[]) {
    this.forget = onInterrupt(() => this.stop(5_000));
    configs.forEach((config, i) => {
      const child = fork(path.join(import.meta.dirname, script), [], {
        // BENCH_WORKER_PROFILE=DIR: each load process writes a V8 CPU profile there when it exits.
        // BENCH_WORKER_HEAP_DIR=DIR: `kill -USR2 <pid>` makes a load process write a heap snapshot there.
        execArgv: [
          '--import',
          'tsx',
          ...(process.env.BENCH_WORKER_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_WORKER_PROFILE}`] : []),
          ...(process.env.BENCH_WORKER_HEAP_DIR ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${process.env.BENCH_WORKER_HEAP_DIR}`] : []),
        ],
        env: { ...process.env, [WORKER_CONFIG]: JSON.stringify(config) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child.on('message', (msg) => {
        const m = msg as M;
        // A periodic report replaces the worker's previous one: the inbox stays bounded.
        if (m.type === 'vitals') {
          this.latestVitals[i] = m;
          return;
        }
        this.inbox.push({ from: i, msg: m });
        for (const w of [...this.waiting]) w();
      });
      child.on('exit', () => {
        for (const w of [...this.waiting]) w();
      });
      this.children.push(child);
    });
  }

  /** Each worker's newest `vitals` message (those that sent one). */
  vitals(): M[] {
    return this.latestVitals.filter((m): m is M => m !== undefined);
  }

  get pids(): number[] {
    return this.children.map((c) => c.pid!);
  }

  send(msg: { type: string }): void {
    for (const c of this.children) if (c.connected) c.send(msg);
  }

  /** One message of `type` from every worker (in worker order); throws when one exits first. */
  async collect<T extends M['type']>(type: T, timeoutMs: number): Promise<Extract<M, { type: T }>[]> {
    const until = performance.now() + timeoutMs;
    for (;;) {
      const got = this.children.map((_, i) => this.inbox.find((m) => m.from === i && m.msg.type === type));
      if (got.every((g) => g !== undefined)) {
        for (const g of got) this.inbox.splice(this.inbox.indexOf(g!), 1);
        return got.map((g) => g!.msg as Extract<M, { type: T }>);
      }
      const dead = this.children.findIndex((c, i) => got[i] === undefined && c.exitCode !== null);
      if (dead >= 0) throw new Error(`load worker ${dead} (${this.children[dead]!.pid}) exited with ${this.children[dead]!.exitCode} before sending ${type}`);
      if (performance.now() > until) throw new Error(`load workers sent no ${type} within ${timeoutMs} ms`);
      await new Promise<void>((r) => {
        const t = setTimeout(done, 1_000);
        this.waiting.add(done);
        function done() {
          clearTimeout(t);
          r();
        }
      }).finally(() => this.waiting.clear());
    }
  }

  /** Ask every worker to stop, then make sure each has exited. */
  async stop(graceMs = 15_000): Promise<void> {
    this.forget();
    this.send({ type: 'stop' });
    await Promise.all(
      this.children.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once('exit', r));
        await Promise.race([exited, sleep(graceMs)]);
        if (c.exitCode === null && c.signalCode === null) {
          c.kill('SIGKILL');
          await exited;
        }
      }),
    );
  }
}
