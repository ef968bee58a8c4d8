import { connect } from 'node:net';
import type { HealthCheck, ServiceSpec } from '../core/model/index.js';
import type { Runtime, WorkloadHandle } from './runtime.js';

type HealthState = 'unknown' | 'passing' | 'failing';

/** One check's running state: consecutive failures against the threshold, and when to probe next. */
export class CheckState {
  state: HealthState = 'unknown';
  private failures = 0;
  private nextAt: number;
  private busy = false;

  constructor(
    readonly check: HealthCheck,
    startedAt: number,
  ) {
    this.nextAt = startedAt + check.initialDelayMs;
  }

  due(now: number): boolean {
    return !this.busy && now >= this.nextAt;
  }

  /** Run the probe; resolves true when the state changed. */
  async run(now: number, probe: () => Promise<boolean>): Promise<boolean> {
    this.busy = true;
    this.nextAt = now + this.check.intervalMs;
    const before = this.state;
    try {
      if (await probe()) {
        this.failures = 0;
        this.state = 'passing';
      } else if (++this.failures >= this.check.failureThreshold) {
        this.state = 'failing';
      }
    } finally {
      this.busy = false;
    }
    return before !== this.state;
  }
}

function portOf(spec: ServiceSpec, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return spec.ports.find((p) => p.name === port)?.container;
}

/** The probe in words, for diagnostics: `http GET /healthz on port 8080`. */
export function probeText(check: HealthCheck, spec: ServiceSpec): string {
  const p = check.probe;
  if (p.type === 'exec') return `exec ${p.command.join(' ')}`;
  const port = portOf(spec, p.port);
  return p.type === 'http' ? `http GET ${p.path} on port ${port ?? p.port ?? '?'}` : `tcp connect to port ${port ?? p.port ?? '?'}`;
}

/**
 * http: a 2xx/3xx answer; tcp: a connection; exec: exit 0 inside the workload. `host` is the
 * replica's own address when the runtime gave it one (its own network namespace), else
 * 127.0.0.1 (host networking: the workload listens on the node).
 */
export function probeFor(check: HealthCheck, spec: ServiceSpec, runtime: Runtime, handle: WorkloadHandle, host = '127.0.0.1'): () => Promise<boolean> {
  const p = check.probe;
  const timeoutMs = check.timeoutMs;
  if (p.type === 'exec') return async () => (await runtime.exec(handle, p.command, timeoutMs).catch(() => 1)) === 0;
  const port = portOf(spec, p.port);
  if (port === undefined) return async () => false;
  if (p.type === 'http') {
    return async () => {
      try {
        const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${port}${p.path}`, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
        await res.body?.cancel();
        return res.status >= 200 && res.status < 400;
      } catch {
        return false;
      }
    };
  }
  return () =>
    new Promise((resolve) => {
      const s = connect({ host, port, timeout: timeoutMs });
      const done = (ok: boolean) => {
        s.destroy();
        resolve(ok);
      };
      s.once('connect', () => done(true));
      s.once('error', () => done(false));
      s.once('timeout', () => done(false));
    });
}
