import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FENCE } from '../../agent/core/fence.js';
import { cannotReachAfterMs, historyWindowMs, keepaliveEveryMs, QUORUM, quorumFits, renewingWithinMs } from '../../core/model/quorum.js';

const doc = readFileSync(new URL('../../docs/fencing.md', import.meta.url), 'utf8');
const n = (v: number) => v.toLocaleString('en-US');
/** The table row naming `name` states `value`. */
const row = (name: string) => doc.split('\n').find((l) => l.startsWith(`| ${name}`)) ?? '';

describe('quorum constants (docs/fencing.md states the code)', () => {
  it('every QUORUM constant is in the table with its value', () => {
    for (const [k, v] of Object.entries(QUORUM)) {
      const unit = k.endsWith('Seconds') ? 's' : k.endsWith('Ms') ? 'ms' : '';
      if (unit === '') continue;
      expect(row(`\`QUORUM.${k}\``), k).toContain(`| ${n(v)} ${unit} |`);
    }
  });

  it('the derived values at the default TTL', () => {
    const T = QUORUM.defaultTtlSeconds * 1000;
    expect(row('K = T/4')).toContain(`| ${n(keepaliveEveryMs(T))} ms |`);
    expect(row('R = K + D + 2g')).toContain(`| ${n(renewingWithinMs(T))} ms |`);
    expect(row('Q = R + D + F + 500')).toContain(`| ${n(cannotReachAfterMs(T))} ms |`);
    expect(row('W = T + S + 10 s')).toContain(`| ${n(historyWindowMs(T))} ms |`);
    expect(doc).toContain(`(${n(cannotReachAfterMs(T) + QUORUM.pollMs + QUORUM.askTimeoutMs)} ≤ ${n(T - FENCE.marginMs - keepaliveEveryMs(T) - QUORUM.keepaliveTimeoutMs)} ms at T = ${QUORUM.defaultTtlSeconds} s)`);
  });

  it('the inequalities the argument needs hold', () => {
    // The default TTL fits; 25 s is the smallest that does (the doc says so).
    expect(quorumFits(QUORUM.defaultTtlSeconds * 1000, FENCE.marginMs)).toBe(true);
    expect(quorumFits(28_000, FENCE.marginMs)).toBe(true);
    expect(quorumFits(27_000, FENCE.marginMs)).toBe(false);
    expect(doc).toContain('the rule fits from 28 s');
    // A peer with a keepalive in flight waits for it (≤ D) before answering: the question outlasts that.
    expect(QUORUM.askTimeoutMs).toBeGreaterThan(QUORUM.keepaliveTimeoutMs);
    // Confirmations chain without a gap: a poll and its answer come before the last one lapses.
    expect(QUORUM.freshMs).toBeGreaterThan(QUORUM.pollMs + QUORUM.askTimeoutMs);
    // An expired node's copies die before its replicas are declared lost.
    const window = FENCE.checkMs + FENCE.killMs;
    expect(QUORUM.lostGraceMs).toBeGreaterThanOrEqual(window);
    expect(doc).toContain(`L ≥ check + kill = ${n(window)} ms`);
    expect(doc).toContain(`\`te + ${window / 1000} s\``);
    expect(doc).toContain(`L leaves ${(QUORUM.lostGraceMs - window) / 1000} s of room`);
    // A confirmation outlasts a peer round, however slow within G.
    expect(QUORUM.settleMs).toBeGreaterThan(QUORUM.freshMs);
    // Q > R + D + F: a renewing member cannot vote "cannot reach" before the chain lapses.
    for (const T of [28_000, 30_000, 60_000]) expect(cannotReachAfterMs(T)).toBeGreaterThan(renewingWithinMs(T) + QUORUM.keepaliveTimeoutMs + QUORUM.freshMs);
    // R covers a healthy agent: one keepalive interval, its timeout, both roundings.
    expect(renewingWithinMs(30_000)).toBeGreaterThanOrEqual(keepaliveEveryMs(30_000) + QUORUM.keepaliveTimeoutMs + 2 * QUORUM.granularityMs);
  });
});
