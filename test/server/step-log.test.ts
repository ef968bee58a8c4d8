import { describe, expect, it } from 'vitest';
import { ServerMetrics } from '../../handlers/metrics.js';
import { createLogger } from '../../server/log.js';
import { graphileLog, stepLog } from '../../server/step-log.js';

describe('controller step results in the pod log (server/step-log.ts)', () => {
  it('a step that wrote or failed is info; a converged one, or one the store outage failed, is debug; all are counted', async () => {
    const out: string[] = [];
    const metrics = new ServerMetrics();
    const steps = stepLog(metrics, createLogger({ level: 'info', format: 'json' }, { pod: 'p' }, { write: (s: string) => void out.push(s) }));
    steps.step({ controller: 'replica', subject: 'web', ok: true, ms: 3.25, writes: 2 });
    steps.step({ controller: 'replica', subject: 'web', ok: true, ms: 1, writes: 0 });
    steps.step({ controller: 'scheduler', ok: false, ms: 1, writes: 0, code: 'CCA-E0403' });
    steps.step({ controller: 'scheduler', ok: false, ms: 1, writes: 0, code: 'CCA-E0404' });
    steps.fanout?.({ controller: 'replica', subjects: 3 });
    const lines = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toMatchObject([
      { level: 'info', component: 'controller', controller: 'replica', subject: 'web', outcome: 'ok', writes: 2, durationMs: 3.3, msg: 'step' },
      { level: 'info', controller: 'scheduler', outcome: 'error', code: 'CCA-E0404' },
    ]);
    expect(lines).toHaveLength(2);
    expect(await metrics.registry.getSingleMetricAsString('cca_job_runs_total')).toContain('cca_job_runs_total{controller="scheduler",result="error"} 2');
  });

  it("graphile-worker's lines keep their first line only (a failed task's stack trace stays out) and its info is debug", () => {
    const out: string[] = [];
    const log = graphileLog(createLogger({ level: 'info', format: 'json' }, { pod: 'p' }, { write: (s: string) => void out.push(s) }));
    log('error', "Failed task 4 (cca-step, 3.00ms, attempt 1 of 25) with error 'boom':\n  Error: boom\n      at stepTask (jobs/graphile-driver.ts:1:1)", { workerId: 'w' });
    log('info', 'Completed task 5 (cca-step, 1.00ms) with success', {});
    const lines = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([expect.objectContaining({ level: 'error', workerId: 'w', msg: "Failed task 4 (cca-step, 3.00ms, attempt 1 of 25) with error 'boom':" })]);
  });
});
