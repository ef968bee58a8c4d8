import { formatDuration } from '../core/model/quantity.js';
import type { Context } from './context.js';
import { whyAnswer } from './api.js';
import { ExitError, fail } from './exit.js';
import { follow } from './follow.js';
import { structured } from './output.js';
import { list, type ServiceItem } from './views.js';

export interface WaitRequest {
  names: string[];
  removed: string[];
  /** The revision the apply wrote at: only what happens after it counts. */
  from: number;
  timeoutMs: number;
}

export interface WaitResult {
  converged: boolean;
  interrupted: boolean;
  services: ServiceItem[];
}

// `updated`: a rolling update is over only when every live replica runs the applied spec.
const convergedService = (s: ServiceItem) =>
  s.replicas === s.desired && s.running === s.desired && s.ready === s.desired && s.updated === s.desired && s.pending.length === 0;

/**
 * A stuck roll to the spec as it is now (applied by this apply, or still current from
 * before, e.g. when this apply only scaled): waiting longer cannot help. A stuck roll an
 * apply has just replaced (a rollback) is not current.
 */
const stuckNow = (s: ServiceItem) => s.rollout?.state === 'stuck' && s.rollout.current;

function progressOf(names: string[], removed: string[], items: ServiceItem[]): { done: boolean; line: string; pending: string[] } {
  const by = new Map(items.map((s) => [s.name, s]));
  const parts: string[] = [];
  const pending: string[] = [];
  for (const n of names) {
    const s = by.get(n);
    if (!s) {
      parts.push(`${n} gone`);
      pending.push(`${n}: deleted meanwhile`);
      continue;
    }
    const why = s.pending[0] ? ` (${s.pending.length} pending: ${s.pending[0].replica}: ${s.pending[0].reason})` : '';
    const rolling = s.updated < s.replicas ? `, ${s.updated} updated` : '';
    parts.push(`${n} ${s.running}/${s.desired} running, ${s.ready} ready${rolling}${why}`);
    if (!convergedService(s)) {
      pending.push(`${n}: ${s.ready}/${s.desired} ready${s.pending.map((p) => `; ${p.replica}: ${p.reason}`).join('')}`);
    }
  }
  for (const n of removed) {
    if (by.has(n)) {
      parts.push(`${n} removing`);
      pending.push(`${n}: still present`);
    }
  }
  return { done: pending.length === 0, line: parts.join(' · '), pending };
}

/** How many pending replicas per refresh get their scheduler's reason looked up. */
const EXPLAIN = 3;

/**
 * The service status says only that a replica is unplaced; the scheduler's newest
 * decision about it says why (the shortfall per constraint). Looked up for a few
 * pending replicas; a replica with no decision yet keeps the status's words.
 */
async function explainPending(ctx: Context, items: ServiceItem[]): Promise<void> {
  const pending = items.flatMap((s) => s.pending).slice(0, EXPLAIN);
  await Promise.all(
    pending.map(async (p) => {
      try {
        const a = await ctx.client().json('GET', `/v1/why/replica/${encodeURIComponent(p.replica)}`, whyAnswer);
        const newest = a.history[0]?.decision;
        if (newest?.action === 'pending' && newest.reasons[0]) p.reason = newest.reasons[0];
      } catch (e) {
        if (!(e instanceof ExitError)) throw e;
      }
    }),
  );
}

/**
 * Follow the watch until every applied service has all its replicas running and ready
 * (and every pruned one is gone): a live progress line on a terminal, one line per
 * change otherwise; on timeout, a coded error with the pending reasons.
 */
export async function waitConverged(ctx: Context, req: WaitRequest): Promise<WaitResult> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = AbortSignal.any([ctx.io.signal, timeout]);
  const tty = ctx.io.stderr.isTTY;
  let lastLine = '';
  let state = { done: false, line: '', pending: [] as string[] };
  let items: ServiceItem[] = [];
  let stuck: ServiceItem | undefined;
  const refresh = async () => {
    items = (await list(ctx.client(), 'services')).items as ServiceItem[];
    await explainPending(ctx, items.filter((i) => req.names.includes(i.name)));
    state = progressOf(req.names, req.removed, items);
    stuck = items.find((s) => req.names.includes(s.name) && stuckNow(s));
    if (state.line !== lastLine) {
      lastLine = state.line;
      ctx.io.stderr.write(tty ? `\r\u001b[K${state.line}` : `waiting: ${state.line}\n`);
    }
    return state.done || stuck !== undefined;
  };
  if (!(await refresh())) await follow(ctx, { from: req.from + 1, refresh, signal });
  if (tty) ctx.io.stderr.write('\n');
  if (stuck && !state.done) fail('CCA-E0719', { service: stuck.name, reason: stuck.rollout?.reason ?? '' });
  const mine = items.filter((s) => req.names.includes(s.name));
  if (state.done) {
    if (!structured(ctx.globals)) ctx.io.stdout.write(`converged: ${mine.map((s) => `${s.name} ${s.ready}/${s.desired} ready`).join(', ') || 'nothing to wait for'}\n`);
    return { converged: true, interrupted: false, services: mine };
  }
  if (!timeout.aborted) return { converged: false, interrupted: true, services: mine };
  fail('CCA-E0709', { timeout: formatDuration(req.timeoutMs), count: state.pending.length, pending: state.pending.join(' | ') });
}
