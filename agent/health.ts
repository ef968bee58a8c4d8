import { connect } from 'node:net';
import type { HealthCheck, ServiceSpec } from '../core/model/index.js';
import { portOf } from './core/health.js';
import type { Runtime, WorkloadHandle } from './runtime.js';

export { CheckState, probeText } from './core/health.js';

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
