// Usage over time, kept in the browser for the session: the CPU and memory the agents report
// in their observations (`/observed/…` `usage`), summed per service and per node, and the
// autoscaler's intents (`/autoscale/…`). Nothing new is stored anywhere. Each series is a
// bounded ring; samples closer than GAP_MS to the previous one replace it, so a ring covers
// about MAX × GAP_MS (ten minutes) however many replicas report.
import { decodeFact, parseKey } from '/src/core/keys.js';
import { Ring } from './ring.js';

export const MAX_SAMPLES = 240;
export const GAP_MS = 2_500;

export class UsageLog {
  constructor() {
    this.clear();
  }

  clear() {
    /** `/observed/` key → the replica's latest sample while it runs and reports usage. */
    this.latest = new Map();
    /** `service:<name>` / `node:<name>` → { cpu, mem, n }: the sums over its replicas' latest samples, kept as they change. */
    this.sums = new Map();
    /** `service:<name>` / `node:<name>` → Ring of { t, cpu, mem, n }. */
    this.series = new Map();
    /** service → Ring of { t, desired } (the autoscaler's intent, as it changed). */
    this.intents = new Map();
    /** The time of the first sample this tab took. */
    this.firstAt = undefined;
  }

  ingest(batch, at) {
    if (batch.reset) {
      this.clear();
      return true;
    }
    // A listing is the whole picture again (the first one, or after a compaction): forget who reported.
    if (batch.listing) {
      this.latest.clear();
      this.sums.clear();
    }
    const touched = new Map();
    const touch = (group, t) => touched.set(group, Math.max(touched.get(group) ?? -Infinity, t));
    for (const ev of batch.events) {
      const p = parseKey(ev.kv.key);
      if (p?.kind === 'observed') {
        const was = this.latest.get(ev.kv.key);
        const o = ev.type === 'put' ? decodeFact('observed', ev.kv.key, ev.kv.value) : undefined;
        const now = o?.state === 'running' && o.usage ? { service: o.service, node: o.node, cpu: o.usage.cpuMillis, mem: o.usage.memoryBytes } : undefined;
        if (!was && !now) continue;
        this.move(ev.kv.key, was, now);
        const t = o?.at ?? at;
        for (const r of [was, now]) if (r) {
          touch(`service:${r.service}`, t);
          touch(`node:${r.node}`, t);
        }
      } else if (p?.kind === 'autoscale' && ev.type === 'put') {
        const i = decodeFact('autoscale', ev.kv.key, ev.kv.value);
        const ring = this.intents.get(i.service) ?? this.intents.set(i.service, new Ring(MAX_SAMPLES)).get(i.service);
        if (ring.last?.desired !== i.desired) ring.push({ t: i.at, desired: i.desired });
      }
    }
    for (const [group, t] of touched) this.sample(group, t);
    return touched.size > 0;
  }

  /** One replica's sample replaced (`was` → `now`, either absent): its groups' sums follow, in O(1). */
  move(key, was, now) {
    const add = (r, sign) => {
      for (const g of [`service:${r.service}`, `node:${r.node}`]) {
        const sum = this.sums.get(g) ?? this.sums.set(g, { cpu: 0, mem: 0, n: 0 }).get(g);
        sum.cpu += sign * r.cpu;
        sum.mem += sign * r.mem;
        sum.n += sign;
      }
    };
    if (was) add(was, -1);
    if (now) {
      add(now, 1);
      this.latest.set(key, now);
    } else this.latest.delete(key);
  }

  sample(group, t) {
    const { cpu, mem, n } = this.sums.get(group) ?? { cpu: 0, mem: 0, n: 0 };
    const ring = this.series.get(group) ?? this.series.set(group, new Ring(MAX_SAMPLES)).get(group);
    const point = { t, cpu, mem, n };
    this.firstAt ??= t;
    const last = ring.last;
    if (last && t - ring.items.at(-2)?.t < GAP_MS && t >= last.t) ring.items[ring.items.length - 1] = point;
    else if (!last || t >= last.t) ring.push(point);
  }
}
