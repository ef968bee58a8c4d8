import { describe, expect, it } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { agentRegistry, parseListen, serveMetrics } from '../../agent/metrics.js';
import { parsePromText, total } from '../support/prom-text.js';

describe('the agent metrics (agent/metrics.ts)', () => {
  it('reads the core at scrape time: workloads by state, fence margin, keepalive age', async () => {
    let vitals = { slots: { running: 2, exited: 1 } as Record<string, number>, fenced: false, fenceMarginMs: 12_500 as number | undefined, sinceKeepaliveMs: 1_500, peerQuestions: 0 };
    const registry = agentRegistry(() => vitals);
    let s = parsePromText(await registry.metrics()).samples;
    expect(total(s, 'cca_agent_workloads', { state: 'running' })).toBe(2);
    expect(total(s, 'cca_agent_workloads', { state: 'exited' })).toBe(1);
    expect(total(s, 'cca_agent_fence_margin_seconds')).toBe(12.5);
    expect(total(s, 'cca_agent_keepalive_age_seconds')).toBe(1.5);
    expect(total(s, 'cca_agent_peer_questions_total')).toBe(0);
    vitals = { slots: {}, fenced: true, fenceMarginMs: undefined, sinceKeepaliveMs: Number.POSITIVE_INFINITY, peerQuestions: 598 };
    s = parsePromText(await registry.metrics()).samples;
    expect(s.filter((x) => x.name === 'cca_agent_workloads')).toEqual([]);
    expect(total(s, 'cca_agent_fence_margin_seconds')).toBeNaN();
    expect(total(s, 'cca_agent_keepalive_age_seconds')).toBe(Number.POSITIVE_INFINITY);
    expect(total(s, 'cca_agent_fenced')).toBe(1);
    expect(total(s, 'cca_agent_peer_questions_total')).toBe(598);
  });

  it('--metrics-listen is HOST:PORT (CCA-E0731); a port it cannot take is CCA-E0732', async () => {
    expect(parseListen('0.0.0.0:9464')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseListen('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
    for (const bad of ['9464', 'host:', 'host:99999']) expect(() => parseListen(bad)).toThrow(expect.objectContaining({ code: 'CCA-E0731' }));
    const registry = agentRegistry(() => ({ slots: {}, fenced: false, fenceMarginMs: undefined, sinceKeepaliveMs: 0, peerQuestions: 0 }));
    const first = await serveMetrics(registry, '127.0.0.1:0');
    try {
      const port = new URL(first.url).port;
      const err = await serveMetrics(registry, `127.0.0.1:${port}`).catch((e: unknown) => e);
      expect(isCcaError(err) && err.code).toBe('CCA-E0732');
    } finally {
      await first.close();
    }
  });
});
