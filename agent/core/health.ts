/** Health checks' bookkeeping (thresholds, when to probe next) and their wording; the probes' I/O is the shell's (agent/health.ts). */
import type { HealthCheck, ServiceSpec } from '../../core/model/index.js';

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

export function portOf(spec: ServiceSpec, port: number | string | undefined): number | undefined {
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

