import { z } from 'zod';
import { constraintSchema, preferenceSchema, taintPattern } from './constraints.js';
import { DEFAULTS, LIMITS } from './defaults.js';
import { SPEC_LIMITS } from './spec-limits.js';
import { parseSealed, sealedLengthFor } from './sealed.js';
import { dnsLabelProblem, envNamePattern, imageProblem, labelKeyPattern } from './names.js';
import { fileModeProblem, octalMode, specPathProblem, type SpecPathKind } from './paths.js';

/** A DNS-label name; a bad one is CCA-E0301 naming what kind of name it was. */
export function dnsLabel(what: string, max = 63) {
  return z.string().superRefine((name, ctx) => {
    const reason = dnsLabelProblem(name, max);
    if (reason) ctx.addIssue({ code: 'custom', message: reason, params: { cca: 'CCA-E0301', what, name, reason, max } });
  });
}

const imageRef = z.string().superRefine((image, ctx) => {
  const reason = imageProblem(image);
  if (reason) ctx.addIssue({ code: 'custom', message: reason, params: { cca: 'CCA-E0311', image, reason } });
});

/**
 * Which rules paths and modes follow. `apply`: everything a user sends (API, `.cca`, the
 * console) and every spec written from now on. `stored`: reading what is already in the
 * store, which an older server may have written under looser rules (any absolute path
 * without NUL, modes up to 07777): failing to read one stored service would fail every
 * apply and every controller step that lists services, so such a spec stays readable and
 * the agent, which re-checks every spec it runs (agent/confine.ts), refuses it (CCA-E0531).
 */
type Rules = 'apply' | 'stored';

/**
 * A path inside the replica: clean and absolute, and for files and mounts free of mount
 * syntax and reserved places (core/model/paths.ts says why). CCA-E0324, E0325 or E0326.
 */
function specPath(kind: SpecPathKind, rules: Rules): z.ZodString {
  if (rules === 'stored') return z.string().max(4096).regex(/^\/[^\0]*$/, 'must be an absolute path (starting with /)');
  return z.string().superRefine((path, ctx) => {
    const p = specPathProblem(path, kind);
    if (p) ctx.addIssue({ code: 'custom', message: p.reason, params: { cca: p.code, ...p.params } });
  });
}
/** A string field of at most `limit` characters; a longer one is CCA-E0330 with its size. */
function boundedText(what: string, limit: number) {
  return z.string().superRefine((v, ctx) => {
    if (v.length > limit) ctx.addIssue({ code: 'custom', message: `must be at most ${limit} characters`, params: { cca: 'CCA-E0330', what, size: v.length, limit } });
  });
}
const text = boundedText('command argument', LIMITS.stringLength);
const durationMs = z.int().min(0).max(LIMITS.durationMs);
export const portNumberSchema = z.int().min(1).max(65_535);
/** A port by number, or by the name of one of the service's declared ports. */
export const portRefSchema = z.union([portNumberSchema, dnsLabel('port', 15)]);
/** A replica count, or a percentage of the desired replicas as "25%". */
export const countOrPercentSchema = z.union([
  z.int().min(0).max(LIMITS.replicas),
  z.string().regex(/^(100|[1-9]?[0-9])%$/, 'must be a whole number of replicas or a percentage like "25%"'),
]);

export const portSchema = z.strictObject({
  name: dnsLabel('port', 15),
  container: portNumberSchema,
  protocol: z.enum(['tcp', 'udp']).default(DEFAULTS.portProtocol),
});

export const probeSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('http'), path: z.string().regex(/^\/\S*$/, 'must be a path starting with /'), port: portRefSchema.optional() }),
  z.strictObject({ type: z.literal('tcp'), port: portRefSchema.optional() }),
  z.strictObject({ type: z.literal('exec'), command: z.array(text).min(1).max(LIMITS.listItems) }),
]);

export const healthCheckSchema = z.strictObject({
  probe: probeSchema,
  intervalMs: durationMs.min(1).default(DEFAULTS.healthIntervalMs),
  timeoutMs: durationMs.min(1).default(DEFAULTS.healthTimeoutMs),
  failureThreshold: z.int().min(1).max(100).default(DEFAULTS.healthFailureThreshold),
  initialDelayMs: durationMs.default(DEFAULTS.healthInitialDelayMs),
});

export const placementSchema = z.strictObject({
  /** Spread replicas across these node attributes, in priority order. */
  spread: z.array(z.enum(['zone', 'node'])).max(2).default([...DEFAULTS.spread]),
  require: z.array(constraintSchema).max(LIMITS.listItems).default([]),
  restrict: z.array(constraintSchema).max(LIMITS.listItems).default([]),
  prefer: z.array(preferenceSchema).max(LIMITS.listItems).default([]),
  /** Node taints this service tolerates: "key" (any value) or "key=value". */
  accept: z.array(z.string().regex(taintPattern, 'must be a taint like "gpu" or "dedicated=db"')).max(LIMITS.listItems).default([]),
});

export const updateSchema = z.strictObject({
  maxSurge: countOrPercentSchema.default(DEFAULTS.maxSurge),
  maxUnavailable: countOrPercentSchema.default(DEFAULTS.maxUnavailable),
  /** A roll whose new replicas make no progress (none more ready) this long is reported stuck and pauses. */
  progressDeadlineMs: durationMs.min(1).default(DEFAULTS.progressDeadlineMs),
});

export const autoscaleSchema = z.strictObject({
  min: z.int().min(1).max(LIMITS.replicas).default(DEFAULTS.autoscaleMin),
  max: z.int().min(1).max(LIMITS.replicas),
  targetCpuPercent: z.int().min(1).max(100).default(DEFAULTS.autoscaleTargetCpuPercent),
  /** Scale down only to the highest recommendation of this window; omitted: the autoscaler's default (5 min). */
  scaleDownWindowMs: durationMs.optional(),
});

const envSchema = z.record(z.string().regex(envNamePattern, 'must be a valid environment variable name'), boundedText('environment value', LIMITS.stringLength));

export const initStepSchema = z.strictObject({
  name: dnsLabel('init step'),
  /** Defaults to the service's own image. */
  image: imageRef.optional(),
  command: z.array(text).min(1).max(LIMITS.listItems),
  env: envSchema.default({}),
  timeoutMs: durationMs.min(1).default(DEFAULTS.initTimeoutMs),
});

/** Permission bits only: a setuid, setgid or sticky bit is CCA-E0327 (the agent masks them too). */
function fileMode(what: 'config' | 'secret', rules: Rules) {
  if (rules === 'stored') return z.int().min(0).max(0o7777);
  return z
    .int()
    .min(0)
    .superRefine((mode, ctx) => {
      const p = fileModeProblem(mode);
      if (p) ctx.addIssue({ code: 'custom', message: p.bits, params: { cca: 'CCA-E0327', what, mode: octalMode(mode), ...p } });
    });
}

const configFileSchemaFor = (rules: Rules) =>
  z.strictObject({
    name: dnsLabel('config'),
    path: specPath('config', rules),
    content: boundedText('config file content', LIMITS.configBytes),
    mode: fileMode('config', rules).default(DEFAULTS.configMode),
  });

/** A secret's value is never printed back: use redactSpec() before showing a spec to anyone. */
const secretSchemaFor = (rules: Rules) =>
  z.strictObject({
    name: dnsLabel('secret'),
    // Stored values are sealed (core/model/sealed.ts), a third longer than what the user wrote.
    value: z
      .string()
      .max(sealedLengthFor(LIMITS.configBytes))
      .refine((v) => parseSealed(v) !== undefined || v.length <= LIMITS.configBytes, { message: `must be at most ${LIMITS.configBytes} characters` }),
    path: specPath('secret', rules).optional(),
    env: z.string().regex(envNamePattern, 'must be a valid environment variable name').optional(),
    mode: fileMode('secret', rules).default(DEFAULTS.secretMode),
  });

const volumeSchemaFor = (rules: Rules) =>
  z.strictObject({
    name: dnsLabel('volume'),
    sizeBytes: z.int().min(1).max(LIMITS.memoryBytes),
    mountPath: specPath('volume', rules),
    readOnly: z.boolean().default(false),
    /** Once released (service deleted, volume undeclared), the data stays this long; 0 deletes it at once. */
    keepForMs: durationMs.default(DEFAULTS.volumeKeepForMs),
  });

export const configFileSchema = configFileSchemaFor('apply');
export const secretSchema = secretSchemaFor('apply');
export const volumeSchema = volumeSchemaFor('apply');

export const allowRuleSchema = z.strictObject({
  /** The client service allowed in. */
  service: dnsLabel('service'),
  /** One of this service's ports; omitted = every declared port. */
  port: portRefSchema.optional(),
});

/**
 * How a node obtains the image when it is not in its catalogue (containerd nodes pull it from
 * its registry): `if-missing` pulls once and reuses containerd's copy, `always` pulls on every
 * start (a moved tag is followed). `secret` names one of the service's secrets whose value is
 * `user:password` for the registry (docs/agent.md "Images from registries").
 */
export const pullSchema = z.strictObject({
  policy: z.enum(['if-missing', 'always']).default('if-missing'),
  secret: dnsLabel('secret').optional(),
});

const serviceInputSchemaFor = (rules: Rules) =>
  z.strictObject({
    name: dnsLabel('service'),
    image: imageRef,
    /** Omitted: pull if missing, anonymously (the spec stays as it was before pulling existed). */
    pull: pullSchema.optional(),
    command: z.array(text).max(LIMITS.listItems).default([]),
    args: z.array(text).max(LIMITS.listItems).default([]),
    env: envSchema.default({}),
    workdir: specPath('workdir', rules).optional(),
    labels: z.record(z.string().regex(labelKeyPattern, 'must be a label key like team or app.example.com/tier'), z.string().max(63)).default({}),
    /** Omitted: autoscale.min when autoscaling, else 1. */
    replicas: z.int().min(0).max(LIMITS.replicas).optional(),
    resources: z
      .strictObject({
        cpuMillis: z.int().min(1).max(LIMITS.cpuMillis).default(DEFAULTS.cpuMillis),
        memoryBytes: z.int().min(1).max(LIMITS.memoryBytes).default(DEFAULTS.memoryBytes),
      })
      .default({ cpuMillis: DEFAULTS.cpuMillis, memoryBytes: DEFAULTS.memoryBytes }),
    ports: z.array(portSchema).max(64).default([]),
    health: z.strictObject({ liveness: healthCheckSchema.optional(), readiness: healthCheckSchema.optional() }).default({}),
    placement: placementSchema.default({ spread: [...DEFAULTS.spread], require: [], restrict: [], prefer: [], accept: [] }),
    update: updateSchema.default({ maxSurge: DEFAULTS.maxSurge, maxUnavailable: DEFAULTS.maxUnavailable, progressDeadlineMs: DEFAULTS.progressDeadlineMs }),
    autoscale: autoscaleSchema.optional(),
    init: z.array(initStepSchema).max(64).default([]),
    /** Services that must have their desired replicas ready before this one starts. */
    after: z.array(dnsLabel('service')).max(LIMITS.listItems).default([]),
    configs: z.array(configFileSchemaFor(rules)).max(64).default([]),
    secrets: z.array(secretSchemaFor(rules)).max(SPEC_LIMITS.secrets).default([]),
    volumes: z.array(volumeSchemaFor(rules)).max(64).default([]),
    stopGraceMs: durationMs.default(DEFAULTS.stopGraceMs),
    restart: z.enum(['always', 'on-failure', 'never']).default(DEFAULTS.restart),
    network: z.strictObject({ allow: z.array(allowRuleSchema).max(LIMITS.listItems).default([]) }).default({ allow: [] }),
  });

export const serviceInputSchema = serviceInputSchemaFor('apply');
/** The input under the rules an older server wrote with (see Rules): how stored specs are read. */
export const storedServiceInputSchema = serviceInputSchemaFor('stored');

type Parsed = z.output<typeof serviceInputSchema>;
export type Probe = z.output<typeof probeSchema>;
export type HealthCheck = z.output<typeof healthCheckSchema>;
export type Port = z.output<typeof portSchema>;
export type AllowRule = z.output<typeof allowRuleSchema>;

/** A validated service with every default filled in: what `/services/<name>` holds. */
export type ServiceSpec = Omit<Parsed, 'replicas'> & { replicas: number };
/** What a user may send: every defaulted field optional. */
export type ServiceSpecInput = z.input<typeof serviceInputSchema>;

const sortedRecord = (r: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.keys(r).sort().map((k) => [k, r[k]!]));

/**
 * Defaults that depend on other fields, which zod's per-field defaults cannot express,
 * and a canonical key order (maps sorted), so equal specs serialise to equal JSON and a
 * store compare on the value means what it says.
 */
export function normalizeService(s: Parsed): ServiceSpec {
  const replicas = s.replicas ?? s.autoscale?.min ?? DEFAULTS.replicas;
  const firstPort = s.ports[0]?.name;
  const withPort = (h: HealthCheck | undefined): HealthCheck | undefined => {
    if (!h || h.probe.type === 'exec' || h.probe.port !== undefined || firstPort === undefined) return h;
    return { ...h, probe: { ...h.probe, port: firstPort } };
  };
  const health: ServiceSpec['health'] = {};
  const liveness = withPort(s.health.liveness);
  const readiness = withPort(s.health.readiness);
  if (liveness) health.liveness = liveness;
  if (readiness) health.readiness = readiness;
  return {
    name: s.name,
    image: s.image,
    ...(s.pull === undefined ? {} : { pull: s.pull }),
    command: s.command,
    args: s.args,
    env: sortedRecord(s.env),
    ...(s.workdir === undefined ? {} : { workdir: s.workdir }),
    labels: sortedRecord(s.labels),
    replicas,
    resources: s.resources,
    ports: s.ports,
    health,
    placement: s.placement,
    update: s.update,
    ...(s.autoscale === undefined ? {} : { autoscale: s.autoscale }),
    init: s.init.map((i) => ({ ...i, env: sortedRecord(i.env) })),
    after: s.after,
    configs: s.configs,
    secrets: s.secrets,
    volumes: s.volumes,
    stopGraceMs: s.stopGraceMs,
    restart: s.restart,
    network: s.network,
  };
}
