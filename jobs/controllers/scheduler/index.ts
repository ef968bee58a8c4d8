import { buildKey, prefixOf } from '../../../core/keys.js';
import { templateHash } from '../../../core/model/template.js';
import type { Store } from '../../../db/store.js';
import { STEP_PRIORITY, type Controller, type StepContext, type Wakeup } from '../../controller.js';
import { decodeFact } from '../../../core/keys.js';
import { getFact, unchanged, type Fact } from '../../facts.js';
import { causedBy, decide, decisionKey, evidenceOf, repeatOnce } from '../../decisions/record.js';
import { indexBy, listEvery, readClusterView } from '../view.js';
import { packTxns } from './batch.js';
import { commitWindow, type Turn } from '../../write.js';
import { pendingReasons, planPlacements, SCHEDULER, type VolumeNodes } from './plan-placements.js';
import type { Pending } from './types.js';
import { planForgetAllocations, planReleases, planRepairs } from './plan-releases.js';
import { holdOf, type Hold } from './holds.js';
import { retrySoon } from '../../retry.js';

export { SCHEDULER } from './plan-placements.js';

/** After a lost race (a failed compare), plan again this soon. */

export interface SchedulerOptions {
  /**
   * Placement txns in flight at once. PostgresStore batches concurrent txns into one
   * Postgres transaction, so a server on it wants ~16 (graphile steps write through it
   * too); the default is 1.
   */
  txnConcurrency?: number;
  /**
   * Lets the event loop run between building txns (the server passes `setImmediate`): a step
   * then builds its next placements' writes while the store commits the ones in flight.
   */
  turn?: Turn;
}

/**
 * The scheduler: the only writer of `/assigned/`, `/placements/` and `/allocations/`.
 * Each step first releases what retired replicas held and carries out repair requests,
 * then places pending replicas (oldest first) with the pure `place` function.
 */
export const scheduler: Controller = schedulerWith({});

export function schedulerWith(opts: SchedulerOptions): Controller {
  const concurrency = opts.txnConcurrency ?? 1;
  return {
    name: SCHEDULER,
    priority: STEP_PRIORITY.scheduler,
    watches: [prefixOf('replica'), prefixOf('node'), prefixOf('nodeStatus'), prefixOf('audit'), prefixOf('repair'), prefixOf('nodeOp'), prefixOf('service'), prefixOf('volume'), prefixOf('endpoints'), prefixOf('autoscale')],
    async reconcile(ctx: StepContext): Promise<Wakeup> {
      const { store, now } = ctx;
      // Placements are planned on the view the releases left: read again after them, in this
      // step once (a lost node's replacements were placed one job later, ~0.5 s under load),
      // then in the next step if there is still housekeeping.
      for (let pass = 0; ; pass++) {
        const [view, [recordList, placementList, repairs, services, volumes, endpoints, autoscale]] = await Promise.all([
          readClusterView(store),
          listEvery(store, 'replica', 'placement', 'repair', 'service', 'volume', 'endpoints', 'autoscale'),
        ]);
        const records = indexBy(recordList, (r) => r.value.id);
        const placements = indexBy(placementList, (p) => p.value.replica);

        const housekeeping = new Map([...planReleases(view, records, placements, now), ...planRepairs(view, repairs, now), ...planForgetAllocations(view, now)]);
        if (housekeeping.size > 0) {
          const failed = await commitWindow(store, packTxns(housekeeping.values()), concurrency, opts.turn);
          if (pass === 0 && failed === 0) continue;
          return { at: now };
        }

        const specs = indexBy(services, (s) => s.value.name);
        // A replica made from another template than the spec's is held: its assignment would
        // carry the current spec, so it would run what its record does not say (a rolling
        // update stops it instead). Records from before templates ('') are placed as ever.
        const templates = new Map<string, string>();
        const templateOf = (service: string) => {
          let t = templates.get(service);
          if (t === undefined) templates.set(service, (t = templateHash(specs.get(service)!.value)));
          return t;
        };
        const deps = { services: specs, endpoints: indexBy(endpoints, (e) => e.value.service), autoscale: indexBy(autoscale, (a) => a.value.service) };
        const pending: Pending[] = [];
        const holds: Hold[] = [];
        for (const record of recordList
          .filter((r) => r.value.desired === 'run' && !r.value.retired && !placements.has(r.value.id) && specs.has(r.value.service))
          .filter((r) => r.value.template === '' || r.value.template === templateOf(r.value.service))
          .sort((a, b) => a.value.createdAt - b.value.createdAt || (a.value.id < b.value.id ? -1 : 1))) {
          const p: Pending = { record, spec: specs.get(record.value.service)! };
          const h = holdOf(p, deps, now);
          if ('hold' in h) holds.push(h.hold);
          else pending.push(h.gate ? { ...p, gate: h.gate } : p);
        }
        const wake = holds.reduce<number | undefined>((at, h) => (h.until === undefined ? at : Math.min(at ?? Infinity, h.until)), undefined);
        const until = (w: Wakeup): Wakeup => (wake === undefined ? w : { at: Math.min(w.at ?? Infinity, wake) });
        if (pending.length === 0) return until(holds.length > 0 ? ((await recordPending(store, holds, now)) > 0 ? retrySoon(now) : {}) : {});
        const live = (id: string) => {
          const r = records.get(id);
          return !!r && r.value.desired === 'run' && !r.value.retired;
        };
        const volumeNodes: VolumeNodes = new Map();
        for (const v of volumes) {
          const held = volumeNodes.get(v.value.service) ?? new Map<string, number>();
          held.set(v.value.node, Math.max(held.get(v.value.node) ?? 0, v.value.usedAt));
          volumeNodes.set(v.value.service, held);
        }
        const plan = planPlacements(view, pending, live, now, volumeNodes);
        const failed = await commitWindow(store, packTxns(plan.groups), concurrency, opts.turn);
        // Pending decisions are recorded on a view without this step's own placements in
        // flight, so their basis is the one the next step will see (else a converged system
        // would keep bumping repetition counts).
        if (plan.more || (plan.placed > 0 && (plan.unplaced.length > 0 || holds.length > 0))) return failed > 0 ? retrySoon(now) : { at: now };
        const unplaced: Hold[] = plan.unplaced.map((u) => ({ pending: u.pending, reasons: pendingReasons(u.pending, u.shortfall, u.excluded), basis: u.basis, evidence: [] }));
        const pendingFailed = await recordPending(store, [...unplaced, ...holds], now);
        return until(failed + pendingFailed > 0 ? retrySoon(now) : {});
      }
    },
  };
}

/**
 * A replica that fits nowhere gets a pending decision naming the shortfall. The same
 * shortfall on the same basis writes nothing; the same shortfall on a new basis only counts
 * a repetition in the summary (never a cause); a different shortfall is a new decision.
 */
async function recordPending(store: Store, unplaced: readonly Hold[], now: number): Promise<number> {
  let failed = 0;
  for (const u of unplaced) {
    const r = u.pending.record.value;
    const repeat = await getFact(store, 'repeat', SCHEDULER, 'replica', r.id);
    const lastKv = repeat ? await store.get(repeat.value.decision) : null;
    const last = lastKv ? decodeFact('decision', lastKv.key, lastKv.value) : undefined;
    const reasons = u.reasons;
    const same = last && last.action === 'pending' && JSON.stringify(last.reasons) === JSON.stringify(reasons);
    if (same && (repeat?.value.basis ?? last.basis) === u.basis) continue;
    if (same && repeat) {
      const rep = repeatOnce(SCHEDULER, 'replica', r.id, repeat.value.decision, repeat, now, u.basis);
      const res = await store.txn({ compare: [...rep.compares, unchanged(u.pending.record)], success: rep.ops });
      if (!res.succeeded) failed++;
      continue;
    }
    const d = decide({
      kind: 'replica',
      subject: r.id,
      controller: SCHEDULER,
      action: 'pending',
      tag: 'sched-pending',
      at: now,
      evidence: [evidenceOf(u.pending.record), evidenceOf(u.pending.spec), ...u.evidence],
      cause: causedBy(decisionKey('replica', r.id, r.createdAt, 'rc-create')),
      reasons,
      basis: u.basis,
    });
    const rep = repeatOnce(SCHEDULER, 'replica', r.id, d.key, repeat, now, u.basis);
    const res = await store.txn({
      compare: [...d.compares, ...rep.compares, unchanged(u.pending.record), { key: buildKey('placement', r.id), target: 'createRevision', op: '=', value: 0 }],
      success: [...d.ops, ...rep.ops],
    });
    if (!res.succeeded) failed++;
  }
  return failed;
}

