/**
 * Every default a service spec gets, in one place, so the docs, the schema and `toCca`
 * agree. docs/language.md lists the same table; a test compares them.
 */
export const DEFAULTS = {
  replicas: 1,
  cpuMillis: 100,
  memoryBytes: 128 * 1024 * 1024,
  portProtocol: 'tcp',
  healthIntervalMs: 10_000,
  healthTimeoutMs: 1_000,
  healthFailureThreshold: 3,
  healthInitialDelayMs: 0,
  preferWeight: 50,
  maxSurge: 1,
  maxUnavailable: 0,
  progressDeadlineMs: 600_000,
  autoscaleMin: 1,
  autoscaleTargetCpuPercent: 70,
  initTimeoutMs: 60_000,
  configMode: 0o644,
  secretMode: 0o400,
  stopGraceMs: 10_000,
  restart: 'always',
  spread: ['zone', 'node'],
  /** How long a released volume's data stays on its node before it is deleted (docs/volumes.md). */
  volumeKeepForMs: 24 * 3_600_000,
} as const;

/** Hard limits that keep one spec from asking for absurd amounts (and keep numbers safe integers). */
export const LIMITS = {
  replicas: 10_000,
  cpuMillis: 1_024_000,
  memoryBytes: 2 ** 50,
  durationMs: 7 * 86_400_000,
  listItems: 256,
  stringLength: 65_536,
  configBytes: 1024 * 1024,
} as const;
