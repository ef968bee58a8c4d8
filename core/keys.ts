/**
 * THE key layout: every key prefix in the store, the schema of its values, and its single
 * writer. No other module builds key strings by hand. Read this table first.
 *
 * Rules it encodes (docs/keys.md is generated from it):
 * - one writer per prefix (per key where the key names its writer, e.g. an agent's node);
 * - every segment is a name that cannot contain `/`, so prefixes never overlap;
 * - values are JSON text validated against the schema on the way in and out.
 */
import type { z } from 'zod';
import { CcaError } from './diagnostics/error.js';
import * as f from './model/facts.js';
import { apiTokenSchema, tokenHashSchema } from './model/auth.js';
import { nodeRecordSchema } from './model/node.js';
import { membershipSchema } from './model/quorum.js';
import { redactJson, redactSpec, type RedactLevel } from './redact.js';
import { storedServiceSpecSchema } from './model/service.js';

export type Writer =
  | 'api'
  | 'replica controller'
  | 'scheduler'
  | 'node controller'
  | 'agent of <node>'
  | 'auditor'
  | 'endpoint controller'
  | 'autoscaler'
  | 'rollout controller'
  | 'storage controller'
  | 'network controller'
  | 'the controller named in the record';

interface KeySpec {
  prefix: string;
  params: readonly string[];
  schema: z.ZodType;
  writer: Writer;
  /** The lease the key is attached to, when it has one. */
  lease?: string;
  doc: string;
}

export const layout = {
  // Read under the rules a spec was written with (an older server's looser ones too); new specs pass validateService first.
  service: { prefix: '/services/', params: ['service'], schema: storedServiceSpecSchema, writer: 'api', doc: 'desired spec of a service, as applied (`cca apply`)' },
  replica: { prefix: '/replicas/', params: ['service', 'replica'], schema: f.replicaRecordSchema, writer: 'replica controller', doc: 'a replica that should exist (or is stopping), with a fresh id per replacement' },
  assigned: { prefix: '/assigned/', params: ['node', 'replica'], schema: f.assignmentSchema, writer: 'scheduler', doc: 'a placement of a replica on a node, carrying the spec; agents long-poll their own node' },
  placement: { prefix: '/placements/', params: ['replica'], schema: f.replicaPlacementSchema, writer: 'scheduler', doc: 'which node a replica is placed on; the one key a placement compares to rule out a second assignment' },
  allocation: { prefix: '/allocations/', params: ['node'], schema: f.allocationSchema, writer: 'scheduler', doc: "sum of a node's assignments, updated in the same txn as every placement and release" },
  node: { prefix: '/nodes/', params: ['node'], schema: nodeRecordSchema, writer: 'agent of <node>', lease: "the agent's registration lease", doc: "a node's declared capacity, zone, labels, taints and images; its create revision is the tenure" },
  nodeStatus: { prefix: '/node-status/', params: ['node'], schema: f.nodeStatusSchema, writer: 'node controller', doc: 'ready, lost or cordoned, per tenure' },
  membership: { prefix: '/membership/', params: ['set'], schema: membershipSchema, writer: 'node controller', doc: "`/membership/nodes`: the members the quorum rule counts (nodes neither lost nor removed) with each one's peer address and public key, as a short history of versions kept W after they were superseded, and the hold state (docs/fencing.md)" },
  lost: { prefix: '/lost/', params: ['node', 'replica'], schema: f.lostReplicaSchema, writer: 'node controller', doc: 'a replica presumed gone with its node (after the grace; a stateful one only with a proof: node-confirmed or operator-fence), for the replica controller to replace' },
  observed: { prefix: '/observed/', params: ['node', 'replica'], schema: f.observationSchema, writer: 'agent of <node>', doc: 'what the agent sees of a workload: state, exit, health, usage' },
  event: { prefix: '/events/', params: ['node', 'event'], schema: f.eventSchema, writer: 'agent of <node>', doc: 'things that happened on a node, for people' },
  decision: { prefix: '/decisions/', params: ['kind', 'subject', 'decision'], schema: f.decisionSchema, writer: 'the controller named in the record', doc: 'an immutable decision with evidence and cause; ids are unique per controller' },
  repeat: { prefix: '/repeats/', params: ['controller', 'kind', 'subject'], schema: f.repeatSchema, writer: 'the controller named in the record', doc: 'how often a decision repeated; never a cause' },
  audit: { prefix: '/audit/', params: ['node'], schema: f.auditFindingSchema, writer: 'auditor', doc: "the auditor's rebuild of a node's allocation; an open finding blocks placements" },
  repair: { prefix: '/repair/', params: ['node'], schema: f.repairRequestSchema, writer: 'api', doc: 'an operator asks the scheduler to repair an audited node' },
  nodeOp: { prefix: '/nodeops/', params: ['node'], schema: f.nodeOpSchema, writer: 'api', doc: "an operator's intent for a node: cordoned (no new placements), draining (its replicas replaced elsewhere within each service's rolling-update limits) or removed (a lost node forgotten); `cca node cordon|uncordon|drain|remove`" },
  fence: { prefix: '/fences/', params: ['node'], schema: f.fenceSchema, writer: 'api', doc: "an operator asserts a node's workloads are stopped (`cca fence node NAME --confirm`)" },
  endpoints: { prefix: '/endpoints/', params: ['service'], schema: f.endpointsSchema, writer: 'endpoint controller', doc: 'addresses of running and ready replicas on ready nodes' },
  autoscale: { prefix: '/autoscale/', params: ['service'], schema: f.autoscaleIntentSchema, writer: 'autoscaler', doc: 'desired replica count from CPU usage; the spec keeps the user\'s replicas' },
  rollout: { prefix: '/rollouts/', params: ['service'], schema: f.rolloutSchema, writer: 'rollout controller', doc: 'a rolling update in progress, complete or stuck' },
  volume: { prefix: '/volumes/', params: ['node', 'service', 'volume'], schema: f.volumeRecordSchema, writer: 'storage controller', doc: 'a local volume wanted on a node, kept while its service declares it (per node and service, not per replica: a replacement finds the data)' },
  volumeHold: { prefix: '/volume-holds/', params: ['node', 'service', 'volume'], schema: f.volumeHoldSchema, writer: 'api', doc: "an operator keeps a released volume's data past its `keep_for` (`cca volume keep`); deleted by `cca volume release`" },
  observedVolume: { prefix: '/observed-volumes/', params: ['node', 'service', 'volume'], schema: f.volumeObservationSchema, writer: 'agent of <node>', doc: "the agent's report of a local volume" },
  authToken: { prefix: '/auth/tokens/', params: ['token'], schema: apiTokenSchema, writer: 'api', doc: 'SHA-256 of an API token with its role (admin, deployer, reader, join), expiry, uses left and revocation (never the token itself: reading it grants nothing); the bootstrap tokens are `admin` and `join`, issued ones (`cca token create`) 12 hex digits' },
  nodeCredential: { prefix: '/auth/nodes/', params: ['node'], schema: tokenHashSchema, writer: 'api', doc: "SHA-256 of a node's agent credential: created by enrollment only while absent, replaced by its own rotation, deleted by `cca node reset`" },
  network: { prefix: '/network/', params: ['node'], schema: f.networkRulesSchema, writer: 'network controller', doc: "which of the node's replicas are policed (`allow`) and which are open; no addresses (bounded by the node's replica cap)" },
  netPolicy: { prefix: '/netpolicy/', params: ['service'], schema: f.netPolicySchema, writer: 'network controller', doc: "the `allow` policy in force for a policed service's replicas (its current spec's, else the one its replicas were placed with)" },
  netAddrs: { prefix: '/netaddrs/', params: ['service'], schema: f.netAddrsSchema, writer: 'network controller', doc: "the IPv4 addresses of a client service's admissible live replicas, one set shared by every policy that names the service" },
} as const satisfies Record<string, KeySpec>;

export type KeyKind = keyof typeof layout;
type Strings<T extends readonly unknown[]> = { -readonly [I in keyof T]: string };
/** One string per segment the kind's key has, e.g. [service, replica]. */
export type KeyParams<K extends KeyKind> = Strings<(typeof layout)[K]['params']>;
export type FactOf<K extends KeyKind> = z.output<(typeof layout)[K]['schema']>;
export type FactInput<K extends KeyKind> = z.input<(typeof layout)[K]['schema']>;

const MAX_SEGMENT = 253;

/** Why a segment cannot go into a key, or undefined when it can. */
export function segmentProblem(s: string): string | undefined {
  if (s.length === 0) return 'a segment is empty';
  if (s.length > MAX_SEGMENT) return `a segment is longer than ${MAX_SEGMENT} characters`;
  if (s.includes('/')) return 'a segment contains `/`';
  if (s.includes('\0')) return 'a segment contains a NUL character';
  return undefined;
}

function checked(kind: string, values: readonly string[]): readonly string[] {
  for (const v of values) {
    const reason = segmentProblem(v);
    if (reason) throw new CcaError('CCA-E0003', { key: `${kind}(${values.map((x) => JSON.stringify(x)).join(', ')})`, reason });
  }
  return values;
}

/** The full key of one fact. Segments come from validated names; a bad one is a bug (CCA-E0003). */
export function buildKey<K extends KeyKind>(kind: K, ...values: KeyParams<K>): string {
  const def: KeySpec = layout[kind];
  if (values.length !== def.params.length) {
    throw new CcaError('CCA-E0003', { key: kind, reason: `${def.params.length} segments are needed, ${values.length} were given` });
  }
  return def.prefix + checked(kind, values as readonly string[]).join('/');
}

/**
 * The prefix to list or watch: the kind's prefix, narrowed by leading segments, always
 * ending in `/` so `/nodes/n1/` never matches `/nodes/n10`.
 */
export function prefixOf<K extends KeyKind>(kind: K, ...leading: string[]): string {
  const def: KeySpec = layout[kind];
  if (leading.length >= def.params.length) {
    throw new CcaError('CCA-E0003', { key: kind, reason: `a prefix takes fewer than ${def.params.length} segments` });
  }
  return def.prefix + checked(kind, leading).map((s) => `${s}/`).join('');
}

export interface ParsedKey {
  kind: KeyKind;
  params: Record<string, string>;
}

const kinds = Object.keys(layout) as KeyKind[];

/** Kinds by their prefix's first segment (`/auth/` holds two): a key is matched against these only. */
const kindsByHead = new Map<string, KeyKind[]>();
for (const kind of kinds) {
  const prefix = layout[kind].prefix;
  const head = prefix.slice(0, prefix.indexOf('/', 1) + 1);
  kindsByHead.set(head, [...(kindsByHead.get(head) ?? []), kind]);
}

/** The kind whose prefix the key starts with (no prefix is another's prefix, so at most one). */
function kindByPrefix(key: string): KeyKind | undefined {
  const cut = key.indexOf('/', 1);
  if (cut < 0) return undefined;
  for (const kind of kindsByHead.get(key.slice(0, cut + 1)) ?? []) if (key.startsWith(layout[kind].prefix)) return kind;
  return undefined;
}

/** Which fact a key holds, or undefined for a key outside the layout. */
export function parseKey(key: string): ParsedKey | undefined {
  const kind = kindByPrefix(key);
  if (kind === undefined) return undefined;
  const def: KeySpec = layout[kind];
  const parts = key.slice(def.prefix.length).split('/');
  if (parts.length !== def.params.length || parts.some((p) => segmentProblem(p) !== undefined)) return undefined;
  return { kind, params: Object.fromEntries(def.params.map((p, i) => [p, parts[i]!])) };
}

/**
 * `parseKey(key)?.kind` without building the segments: every step reads whole prefixes and
 * checks each key's kind (it was half of a prefix read's CPU).
 */
export function kindOfKey(key: string): KeyKind | undefined {
  const kind = kindByPrefix(key);
  if (kind === undefined || key.includes('\0')) return undefined;
  let start = layout[kind].prefix.length;
  let segments = 0;
  for (;;) {
    const slash = key.indexOf('/', start);
    const end = slash < 0 ? key.length : slash;
    if (end === start || end - start > MAX_SEGMENT) return undefined;
    segments++;
    if (slash < 0) break;
    start = slash + 1;
  }
  return segments === layout[kind].params.length ? kind : undefined;
}

/** Read a stored value; a value that fails its schema is a bug of its writer (CCA-E0002). */
export function decodeFact<K extends KeyKind>(kind: K, key: string, value: string): FactOf<K> {
  const def: KeySpec = layout[kind];
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    throw new CcaError('CCA-E0002', { key, prefix: def.prefix, reason: 'it is not JSON' });
  }
  const r = def.schema.safeParse(json);
  if (!r.success) {
    const first = r.error.issues[0];
    const reason = first ? `${first.path.map(String).join('.') || 'the value'}: ${first.message}` : 'invalid';
    throw new CcaError('CCA-E0002', { key, prefix: def.prefix, reason });
  }
  return r.data as FactOf<K>;
}

/** Validate and serialise a value for its key (defaults filled in). Writing an invalid fact is a bug. */
export function encodeFact<K extends KeyKind>(kind: K, value: FactInput<K>): string {
  const def: KeySpec = layout[kind];
  const r = def.schema.safeParse(value);
  if (!r.success) {
    const first = r.error.issues[0];
    throw new CcaError('CCA-E0002', { key: `${def.prefix}…`, prefix: def.prefix, reason: first ? `${first.path.map(String).join('.') || 'the value'}: ${first.message}` : 'invalid' });
  }
  return JSON.stringify(r.data);
}

/**
 * A fact as it may be shown to a person or leave the cluster (API reads, CLI, bundles):
 * the rules of core/redact.ts applied to the facts that hold specs (desired specs and
 * assignments; no other fact carries secrets).
 */
export function redactFact<K extends KeyKind>(kind: K, value: FactOf<K>, level: RedactLevel = 'secrets'): FactOf<K> {
  if (kind === 'service') return redactSpec(value as FactOf<'service'>, level) as FactOf<K>;
  if (kind === 'assigned') {
    const a = value as FactOf<'assigned'>;
    return { ...a, spec: redactSpec(a.spec, level) } as FactOf<K>;
  }
  return value;
}

/** A stored value (JSON text) as it may leave the server; one that does not decode cannot be shown safely. */
export function redactStoredValue(key: string, value: string, level: RedactLevel = 'secrets'): string {
  const parsed = parseKey(key);
  if (!parsed || (parsed.kind !== 'service' && parsed.kind !== 'assigned')) return value;
  try {
    return encodeFact(parsed.kind, redactFact(parsed.kind, decodeFact(parsed.kind, key, value), level) as never);
  } catch {
    return '(unreadable)';
  }
}

/** A JSON answer (why chains, watch batches, evidence) with every stored value in it redacted. */
export function redactDeep<T>(x: T, level: RedactLevel = 'secrets'): T {
  return redactJson(x, level, (key, value) => redactStoredValue(key, value, level));
}

export interface KeyRow {
  kind: KeyKind;
  pattern: string;
  writer: Writer;
  lease: string;
  doc: string;
}

/** The layout as rows, for docs/keys.md and `cca explain keys`. */
export function keyTable(): KeyRow[] {
  return kinds.map((kind) => {
    const def: KeySpec = layout[kind];
    return { kind, pattern: def.prefix + def.params.map((p) => `<${p}>`).join('/'), writer: def.writer, lease: def.lease ?? '', doc: def.doc };
  });
}

export function keysMarkdown(): string {
  // `<node>` in a writer's name would read as an HTML tag outside code spans.
  const esc = (t: string) => t.replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const rows = keyTable().map((r) => `| \`${r.pattern}\` | ${esc(r.writer)} | ${r.lease || '—'} | ${r.doc} |`);
  return [
    '<!-- generated from core/keys.ts; do not edit by hand -->',
    '# The key layout',
    '',
    'Every key in the store, its single writer, and what it holds. Value schemas are the zod',
    'schemas named in `core/keys.ts`; build and parse keys only with `buildKey`, `prefixOf` and `parseKey`.',
    '',
    '| key | writer | lease | holds |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n') + '\n';
}
