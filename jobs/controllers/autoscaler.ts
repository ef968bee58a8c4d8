import { buildKey, prefixOf } from '../../core/keys.js';
import { AUTOSCALE, recommend, recordRecommendation, stabilise, type CpuSample } from '../../core/model/autoscale.js';
import type { AutoscaleIntent } from '../../core/model/facts.js';
import { ranToCompletion } from '../../core/model/replica-outcome.js';
import { desiredReplicas } from '../../core/model/resolve.js';
import type { Compare, Op, Store } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { deleteKey, getFact, listFacts, putFact, unchanged, type Fact, servicesUnder } from '../facts.js';
import { causedByFact, decide, evidenceOf } from '../decisions/record.js';
import { admissibleObservation, isLive, readReplicaStates, type ReplicaState } from './replica-state.js';
import { retrySoon } from '../retry.js';
import { serviceOfKey } from '../ids.js';

export const AUTOSCALER = 'autoscaler';
/** Samples embedded as evidence in one decision (the rest are counted in its reasons). */
const MAX_EVIDENCE = 32;

export interface AutoscalerOptions {
  /** How often each autoscaled service is looked at (default 15 s). */
  syncMs?: number;
  /** The scale-down window when the spec sets none (default 5 min). */
  scaleDownWindowMs?: number;
  /** The no-change band around the target, as a fraction (default 0.1). */
  tolerance?: number;
}

interface Sampled {
  sample: CpuSample;
  observation: Fact<'observed'>;
}

/**
 * The autoscaler, one step per service with an `autoscale` block: the CPU usage agents report
 * for running replicas (admissible observations only, rule 5) → a recommendation toward the
 * target utilisation → stabilised (scale up at once, scale down only to the window's highest
 * recommendation) → `/autoscale/<service>`. The window's recommendations live in that record,
 * so nothing is remembered between steps; a steady load writes nothing.
 */
export function autoscaler(opts: AutoscalerOptions = {}): Controller {
  const syncMs = opts.syncMs ?? AUTOSCALE.syncMs;
  return {
    name: AUTOSCALER,
    // Not its own prefix: a step woken by its own write would re-plan before the replica
    // controller acted, and scale up twice on the same samples. Usage is polled (syncMs).
    watches: [prefixOf('service')],
    subjectOf: serviceOfKey,
    subjects: (store: Store) => servicesUnder(store, [prefixOf('service'), prefixOf('autoscale')]),
    async reconcile(ctx: StepContext): Promise<Wakeup> {
      if (ctx.subject === undefined) return {};
      const r = await step(ctx, ctx.subject, opts);
      if (r === 'retry') return retrySoon(ctx.now);
      return r === 'idle' ? {} : { at: ctx.now + syncMs };
    },
  };
}

/** The autoscaler with its defaults. */
export const autoscalerController = autoscaler();

async function step(ctx: StepContext, service: string, opts: AutoscalerOptions): Promise<'idle' | 'sync' | 'retry'> {
  const { store, now } = ctx;
  const spec = await getFact(store, 'service', service);
  const intent = await getFact(store, 'autoscale', service);
  const intentKey = buildKey('autoscale', service);
  const specKey = buildKey('service', service);
  const scale = spec?.value.autoscale;
  if (!scale) {
    // Autoscaling turned off (or the service deleted): the spec's replicas rule again.
    if (!intent) return 'idle';
    const ok = await store.txn({ compare: [unchanged(spec, specKey), unchanged(intent)], success: [deleteKey(intentKey)] });
    return ok.succeeded ? 'idle' : 'retry';
  }
  const records = await listFacts(store, 'replica', prefixOf('replica', service));
  const live: ReplicaState[] = [];
  // Replicas that ran to completion count toward the desired number (restart never / on-failure).
  const completed = records.filter((r) => ranToCompletion(r.value)).length;
  for (const s of await readReplicaStates(store, records.filter((r) => r.value.desired === 'run' && !r.value.retired))) {
    if (isLive(s) && !s.lost) live.push(s);
  }
  const sampled = samplesOf(live);
  const windowMs = scale.scaleDownWindowMs ?? opts.scaleDownWindowMs ?? AUTOSCALE.scaleDownWindowMs;
  const rec = recommend({
    current: live.length,
    samples: sampled.map((s) => s.sample),
    targetCpuPercent: scale.targetCpuPercent,
    min: scale.min,
    max: scale.max,
    ...(opts.tolerance !== undefined ? { tolerance: opts.tolerance } : {}),
  });
  if (!rec) return 'sync'; // no usage reported yet: nothing to go on
  const current = desiredReplicas(spec.value, intent?.value.desired);
  // The replica controller has not caught up with the last intent yet: its count is no basis.
  if (live.length + completed !== current) return 'sync';
  // First sight: the window starts with what runs now, so a fresh intent never scales down at once.
  const before = intent?.value.recommendations.length ? intent.value.recommendations : [{ at: now, desired: current }];
  const history = recordRecommendation(before, rec.desired, now, windowMs);
  const st = stabilise({ current, recommended: rec.desired, history, now, windowMs });
  const historyChanged = JSON.stringify(history) !== JSON.stringify(intent?.value.recommendations ?? []);
  if (intent && st.desired === intent.value.desired && !historyChanged) return 'sync';

  const compares: Compare[] = [unchanged(spec), unchanged(intent, intentKey), ...live.map((s) => unchanged(s.record)), ...sampled.map((s) => unchanged(s.observation))];
  const ops: Op[] = [];
  let decision = intent?.value.decision;
  if (st.desired !== current) {
    const up = st.desired > current;
    // The terminal cause: the busiest (scaling up) or idlest (scaling down) replica's report.
    const pick = [...sampled].sort((a, b) => ratio(b.sample) - ratio(a.sample))[up ? 0 : sampled.length - 1]!;
    const shown = sampled.slice(0, MAX_EVIDENCE);
    const d = decide({
      kind: 'service',
      subject: service,
      controller: AUTOSCALER,
      action: `autoscaled ${up ? 'up' : 'down'} to ${st.desired} (from ${current})`,
      tag: up ? 'as-up' : 'as-down',
      at: now,
      evidence: [evidenceOf(spec), ...(intent ? [evidenceOf(intent)] : []), ...shown.map((s) => evidenceOf(s.observation))],
      cause: causedByFact(pick.observation),
      reasons: [
        rec.reason,
        st.reason,
        samplesText(sampled, shown.length),
        ...(rec.missing > 0 ? [`${rec.missing} live replica(s) had no usage sample yet`] : []),
      ],
    });
    compares.push(...d.compares);
    ops.push(...d.ops);
    decision = d.key;
  }
  const value: AutoscaleIntent = {
    service,
    desired: st.desired,
    observedCpuPercent: Math.round(rec.utilisation * 1000) / 10,
    stableSince: intent && st.desired === intent.value.desired ? intent.value.stableSince : now,
    at: now,
    ...(decision !== undefined ? { decision } : {}),
    recommendations: history,
  };
  ops.push(putFact('autoscale', [service], value));
  const r = await store.txn({ compare: compares, success: ops });
  return r.succeeded ? 'sync' : 'retry';
}

/** Samples listed in a decision's reasons; a service with more says how many it left out. */
const MAX_LISTED = 100;

function samplesText(sampled: readonly Sampled[], embedded: number): string {
  const listed = sampled.slice(0, MAX_LISTED).map((s) => `${s.sample.replica} ${s.sample.usedMillis}m/${s.sample.requestedMillis}m`);
  const more = sampled.length > MAX_LISTED ? ` and ${sampled.length - MAX_LISTED} more` : '';
  const notEmbedded = sampled.length > embedded ? ` (${sampled.length - embedded} not embedded as evidence)` : '';
  return `samples: ${listed.join(', ')}${more}${notEmbedded}`;
}

const ratio = (s: CpuSample) => s.usedMillis / Math.max(1, s.requestedMillis);

/** Running replicas whose admissible report carries usage; the others have no sample yet. */
function samplesOf(live: readonly ReplicaState[]): Sampled[] {
  const out: Sampled[] = [];
  for (const s of live) {
    const obs = admissibleObservation(s);
    if (!obs || obs.value.state !== 'running' || !obs.value.usage || !s.assignment) continue;
    out.push({ observation: obs, sample: { replica: s.record.value.id, usedMillis: obs.value.usage.cpuMillis, requestedMillis: s.assignment.value.resources.cpuMillis } });
  }
  return out;
}
