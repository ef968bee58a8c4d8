import { CcaError, makeDiagnostic, type Diagnostic } from '../core/diagnostics/index.js';
import { buildKey, encodeFact } from '../core/keys.js';
import { parseFiles } from '../core/lang/index.js';
import { issueToDiagnostic, planApply, SPEC_LIMITS, validateService, validateServiceSet, type ApplyPlan, type ServiceSpec } from '../core/model/index.js';
import { utf8Length } from '../db/keyspace.js';
import type { Store } from '../db/store.js';
import { readFacts } from '../jobs/facts.js';
import { openSpec, sealSpec, type SecretBox } from './secret-box.js';

/** A request with problems in the user's specs: every diagnostic travels, the first names the error. */
export class InvalidSpecs extends CcaError {
  constructor(readonly all: Diagnostic[]) {
    const first = all[0]!;
    super('CCA-E0612', { count: all.length, first: `${first.code} ${first.message}` });
  }
}

export type ApplyInput =
  | { kind: 'specs'; services: unknown[]; prune: boolean }
  | { kind: 'files'; files: { name: string; text: string }[]; prune: boolean };

async function currentServices(store: Store) {
  const { revision, facts } = await readFacts(store, 'service');
  return { revision, facts, specs: facts.map((f) => f.value) };
}

/** At most SPEC_LIMITS.applyServices services per apply (CCA-E0332): they are written in one txn. */
function limitCount(specs: ServiceSpec[]): ServiceSpec[] {
  if (specs.length > SPEC_LIMITS.applyServices) throw new InvalidSpecs([makeDiagnostic('CCA-E0332', { count: specs.length, limit: SPEC_LIMITS.applyServices })]);
  return specs;
}

function validate(input: ApplyInput, stored: readonly ServiceSpec[]): ServiceSpec[] {
  return limitCount(validateInput(input, stored));
}

function validateInput(input: ApplyInput, stored: readonly ServiceSpec[]): ServiceSpec[] {
  // With prune, stored services the set leaves out are deleted: they are neither targets nor edges.
  const kept = input.prune ? [] : stored;
  const existing = kept.map((s) => s.name);
  const storedAfter = new Map(kept.map((s) => [s.name, s.after]));
  if (input.kind === 'files') {
    const r = parseFiles(input.files, { existing, storedAfter });
    if (r.diagnostics.length > 0) throw new InvalidSpecs(r.diagnostics);
    return r.services;
  }
  const specs: ServiceSpec[] = [];
  const problems: Diagnostic[] = [];
  input.services.forEach((raw, i) => {
    const v = validateService(raw);
    if (v.ok) specs.push(v.value);
    else for (const issue of v.issues) problems.push({ ...issueToDiagnostic(issue), params: { ...issueToDiagnostic(issue).params, service: i } });
  });
  problems.push(...validateServiceSet(specs, { existing, storedAfter }).map(issueToDiagnostic));
  if (problems.length > 0) throw new InvalidSpecs(problems);
  return specs;
}

export interface ApplyResult {
  plan: ApplyPlan;
  /** The revision the services were written at (or the revision the dry run read). */
  revision: number;
  dryRun: boolean;
}

/**
 * Validate, diff against the store, and (unless a dry run) write every desired key in
 * one txn that compares each service's mod revision as read: a concurrent apply makes
 * this one fail with CCA-E0611 instead of silently overwriting it.
 */
export async function applyServices(store: Store, input: ApplyInput, dryRun: boolean, box?: SecretBox): Promise<ApplyResult> {
  const current = await currentServices(store);
  // Diffs compare what the user wrote with what is stored, so stored secrets are opened first.
  const opened = current.specs.map((s) => openSpec(box, s));
  const next = validate(input, opened);
  const plan = planApply(opened, next, input.prune);
  if (dryRun) return { plan, revision: current.revision, dryRun };
  const read = new Map(current.facts.map((f) => [f.value.name, f.kv.modRevision]));
  const touched = [...plan.added, ...plan.changed.map((c) => c.name), ...plan.removed];
  if (touched.length === 0) return { plan, revision: current.revision, dryRun };
  const stored = new Map(current.specs.map((s) => [s.name, s]));
  const byName = new Map(next.map((s) => [s.name, sealSpec(box, s, stored.get(s.name))]));
  if (touched.length > SPEC_LIMITS.applyServices) throw new InvalidSpecs([makeDiagnostic('CCA-E0332', { count: touched.length, limit: SPEC_LIMITS.applyServices })]);
  const puts = [...plan.added, ...plan.changed.map((c) => c.name)].map((name) => ({
    put: { key: buildKey('service', name), value: encodeFact('service', byName.get(name)!) },
  }));
  const bytes = puts.reduce((n, p) => n + utf8Length(p.put.value), 0);
  if (bytes > SPEC_LIMITS.applyStoredBytes) throw new InvalidSpecs([makeDiagnostic('CCA-E0333', { bytes, limit: SPEC_LIMITS.applyStoredBytes })]);
  const r = await store.txn({
    compare: touched.map((name) => ({ key: buildKey('service', name), target: 'modRevision', op: '=', value: read.get(name) ?? 0 })),
    success: [...puts, ...plan.removed.map((name) => ({ delete: { key: buildKey('service', name) } }))],
  });
  if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `service(s) ${touched.join(', ')}` });
  return { plan, revision: r.revision, dryRun };
}

export async function deleteService(store: Store, name: string): Promise<number> {
  const key = buildKey('service', name);
  const r = await store.txn({
    compare: [{ key, target: 'createRevision', op: '>', value: 0 }],
    success: [{ delete: { key } }],
  });
  if (!r.succeeded) throw new CcaError('CCA-E0609', { kind: 'service', name });
  return r.revision;
}
