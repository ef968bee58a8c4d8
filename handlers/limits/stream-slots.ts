import { CcaError } from '../../core/diagnostics/index.js';
import type { Principal } from '../auth.js';

export interface SlotCaps {
  /** Per token (admin, deployer, reader, join), and for all anonymous callers together. */
  streamsPerToken: number;
  /** Per node credential. */
  streamsPerNode: number;
}

/** How long a refused client should wait: a stream slot frees when another stream ends, not on a clock. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Watch streams and long polls held open on this pod, counted per credential: over its cap
 * a request is refused (429 CCA-E0642 with Retry-After) before it holds anything. A slot is
 * given back when its stream ends, however it ends. Per pod: connections are, too.
 */
export class StreamSlots {
  private readonly open = new Map<string, number>();

  constructor(private readonly caps: SlotCaps) {}

  /** Take a slot for `p`, or throw the refusal. The returned function gives it back (at most once). */
  hold(p: Principal): () => void {
    const s = slotOf(p, this.caps);
    const n = this.open.get(s.key) ?? 0;
    if (n >= s.max) throw new CcaError('CCA-E0642', { who: s.who, open: n, max: s.max, flag: s.flag, retryAfterSeconds: RETRY_AFTER_SECONDS });
    this.open.set(s.key, n + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.open.get(s.key) ?? 1) - 1;
      if (left > 0) this.open.set(s.key, left);
      else this.open.delete(s.key);
    };
  }

  /** Slots held now, by credential (tests, metrics). */
  held(p: Principal): number {
    return this.open.get(slotOf(p, this.caps).key) ?? 0;
  }
}

function slotOf(p: Principal, caps: SlotCaps): { key: string; who: string; max: number; flag: string } {
  if (p.kind === 'token') return { key: `token ${p.id}`, who: `the ${p.role} token ${p.id}`, max: caps.streamsPerToken, flag: '--max-streams' };
  if (p.kind === 'node') return { key: `node ${p.node}`, who: `the credential of node ${p.node}`, max: caps.streamsPerNode, flag: '--max-node-streams' };
  return { key: 'anonymous', who: 'anonymous callers (together)', max: caps.streamsPerToken, flag: '--max-streams' };
}
