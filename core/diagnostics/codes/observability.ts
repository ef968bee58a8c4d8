import type { DiagnosticDef } from '../types.js';

/** CCA-E073x: logs and metrics of the server and the agent (docs/observability.md). */
export const observabilityCodes = [
  {
    code: 'CCA-E0730',
    blame: 'user',
    title: 'bad log setting',
    cause: '{setting} {value} is not one of {allowed}',
    fix: 'give --log-level one of trace, debug, info, warn, error, fatal (env CCA_LOG_LEVEL) and --log-format json or pretty (env CCA_LOG_FORMAT)',
    docs: 'docs/observability.md',
  },
  {
    code: 'CCA-E0731',
    blame: 'user',
    title: 'bad metrics address',
    cause: '--metrics-listen {value} is not HOST:PORT',
    fix: 'give the agent --metrics-listen as HOST:PORT, e.g. 127.0.0.1:9464 (0.0.0.0:9464 for a Prometheus on another machine)',
    docs: 'docs/observability.md',
  },
  {
    code: 'CCA-E0732',
    blame: 'environment',
    title: 'metrics endpoint cannot listen',
    cause: 'the agent cannot listen on {address} for its metrics: {reason}',
    fix: 'free that port or give another --metrics-listen HOST:PORT (or leave the flag out: the endpoint is off by default)',
    docs: 'docs/observability.md',
  },
] as const satisfies readonly DiagnosticDef[];
