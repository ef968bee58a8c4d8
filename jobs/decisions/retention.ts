import { parseKey, prefixOf } from '../../core/keys.js';
import type { Decision } from '../../core/model/facts.js';
import type { Store } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { listFacts } from '../facts.js';
import type { ChainLink } from './why.js';

/** Decisions kept per subject, and how long a gone subject's decisions stay after its newest. */
export const RETENTION_DEFAULTS = { keepPerSubject: 20, maxAgeMs: 3_600_000 } as const;

export interface RetentionOptions {
  /** Decisions kept per subject beyond the protected ones. */
  keepPerSubject?: number;
  /** A gone subject's decisions are kept this long after its newest one. */
  maxAgeMs?: number;
}

/**
 * Which decisions to evict. Never evicted: a live subject's newest decision of each
 * (controller, action), its newest `keepPerSubject`, and every decision that the cause
 * chain of a kept decision needs. A gone subject's decisions go once the newest of them
 * is older than `maxAgeMs` (unless a kept chain still needs them).
 */
export function planRetention(decisions: readonly ChainLink[], live: (kind: string, subject: string) => boolean, now: number, opts: RetentionOptions = {}): string[] {
  const keepN = opts.keepPerSubject ?? RETENTION_DEFAULTS.keepPerSubject;
  const maxAge = opts.maxAgeMs ?? RETENTION_DEFAULTS.maxAgeMs;
  const bySubject = new Map<string, ChainLink[]>();
  for (const d of decisions) {
    const k = `${d.decision.kind}/${d.decision.subject}`;
    const list = bySubject.get(k);
    // Appended in place: copying the list per decision made a subject with m decisions cost m².
    if (list) list.push(d);
    else bySubject.set(k, [d]);
  }
  const keep = new Set<string>();
  for (const list of bySubject.values()) {
    list.sort((a, b) => (a.key < b.key ? 1 : -1)); // newest first: ids sort by time
    const { kind, subject } = list[0]!.decision;
    if (live(kind, subject)) {
      const newestOf = new Set<string>();
      list.forEach((d, i) => {
        const ka = `${d.decision.controller}\0${d.decision.action}`;
        if (i < keepN || !newestOf.has(ka)) keep.add(d.key);
        newestOf.add(ka);
      });
    } else if (now - list[0]!.decision.at < maxAge) {
      for (const d of list.slice(0, keepN)) keep.add(d.key);
    }
  }
  const byKey = new Map(decisions.map((d) => [d.key, d.decision]));
  const stack = [...keep];
  while (stack.length > 0) {
    const cause: Decision['cause'] = byKey.get(stack.pop()!)?.cause;
    if (cause && 'decision' in cause && !keep.has(cause.decision) && byKey.has(cause.decision)) {
      keep.add(cause.decision);
      stack.push(cause.decision);
    }
  }
  return decisions.filter((d) => !keep.has(d.key)).map((d) => d.key);
}

/** Subjects that still exist: services with a spec, replicas with a record, registered or known nodes. */
export async function liveSubjects(store: Store): Promise<(kind: string, subject: string) => boolean> {
  const live = new Set<string>();
  for (const prefix of [prefixOf('service'), prefixOf('replica'), prefixOf('node'), prefixOf('nodeStatus')]) {
    for (const kv of (await store.range({ prefix, keysOnly: true })).kvs) {
      const p = parseKey(kv.key);
      if (p?.kind === 'service') live.add(`service/${p.params.service}`);
      if (p?.kind === 'replica') live.add(`replica/${p.params.replica}`);
      if (p?.kind === 'node' || p?.kind === 'nodeStatus') live.add(`node/${p.params.node}`);
    }
  }
  return (kind, subject) => live.has(`${kind}/${subject}`);
}

/**
 * Retention as a timed step: deletes what planRetention evicts. Deleting a decision never
 * changes what any kept decision says; `why` reports a chain cut by an eviction as truncated.
 */
export function retention(opts: RetentionOptions & { everyMs?: number } = {}): Controller {
  const every = opts.everyMs ?? 60_000;
  return {
    name: 'retention',
    watches: [],
    async reconcile(ctx: StepContext): Promise<Wakeup> {
      const { store, now } = ctx;
      const decisions = (await listFacts(store, 'decision', prefixOf('decision'))).map((f) => ({ key: f.key, decision: f.value }));
      const evict = planRetention(decisions, await liveSubjects(store), now, opts);
      for (let i = 0; i < evict.length; i += 100) {
        await store.txn({ compare: [], success: evict.slice(i, i + 100).map((key) => ({ delete: { key } })) });
      }
      return { at: now + every };
    },
  };
}
