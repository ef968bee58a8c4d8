import { execFile } from 'node:child_process';

/** Run `ctr` against one containerd socket and namespace; resolves with stdout and stderr. */
export class Ctr {
  constructor(
    readonly address: string,
    readonly namespace: string,
    readonly bin = 'ctr',
  ) {}

  /** code: the exit code, or 'timeout' when the command ran past timeoutMs (it was killed). */
  run(args: string[], opts: { timeoutMs?: number; allowFail?: boolean } = {}): Promise<{ stdout: string; stderr: string; code: number | 'timeout' }> {
    return new Promise((resolve, reject) => {
      execFile(this.bin, ['-a', this.address, '-n', this.namespace, ...args], { timeout: opts.timeoutMs ?? 30_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
        const e = err as { code?: unknown; killed?: boolean } | null;
        const code = !e ? 0 : e.killed ? 'timeout' : typeof e.code === 'number' ? e.code : 1;
        if (err && !opts.allowFail) {
          const why = stderr.trim().split('\n').pop() || err.message;
          return reject(new Error(`ctr ${args.slice(0, 2).join(' ')}: ${why.replace(/^ctr: /, '')}`));
        }
        resolve({ stdout, stderr, code });
      });
    });
  }

  /** Task id → { pid, status } for every task in the namespace. */
  async tasks(): Promise<Map<string, { pid: number; status: string }>> {
    const { stdout } = await this.run(['task', 'ls']);
    const out = new Map<string, { pid: number; status: string }>();
    for (const line of stdout.split('\n').slice(1)) {
      const [id, pid, status] = line.trim().split(/\s+/);
      if (id && status) out.set(id, { pid: Number(pid), status });
    }
    return out;
  }

  async containers(): Promise<Set<string>> {
    const { stdout } = await this.run(['containers', 'ls', '-q']);
    return new Set(stdout.split('\n').map((s) => s.trim()).filter(Boolean));
  }

  async images(): Promise<Set<string>> {
    const { stdout } = await this.run(['images', 'ls', '-q']);
    return new Set(stdout.split('\n').map((s) => s.trim()).filter(Boolean));
  }

  /** Delete a stopped task; returns the exit code containerd recorded (from its warning line). */
  async deleteTask(id: string, force = false): Promise<number | undefined> {
    const r = await this.run(['task', 'delete', ...(force ? ['-f'] : []), id], { allowFail: true });
    if (r.code !== 0) return undefined;
    const m = /exit code (\d+)/.exec(r.stderr);
    return m ? Number(m[1]) : 0;
  }
}

/** One line of `ctr events`: "<date> <time> <zone> <UTC> <namespace> <topic> <json>". */
export function parseEventLine(line: string): { namespace: string; topic: string; event: Record<string, unknown> } | undefined {
  const m = /^\S+ \S+ \S+ \S+ (\S+) (\/\S+) (\{.*\})\s*$/.exec(line);
  if (!m) return undefined;
  try {
    return { namespace: m[1]!, topic: m[2]!, event: JSON.parse(m[3]!) as Record<string, unknown> };
  } catch {
    return undefined;
  }
}
