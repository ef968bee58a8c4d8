import { expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

// sim-network over several seeds: each seed draws its own faults and interleavings.
const base = Number(process.env.CCA_SIM_SEED_BASE ?? 0) + 1;

test('sim-network holds its invariants over 16 seeds', async () => {
  const failures: string[] = [];
  for (let seed = base; seed < base + 16; seed++) {
    const r = await runScenario('sim-network', { seed, traceLimit: 300 });
    if (!r.ok) failures.push(`${describeFailure(r)}\n${r.trace.slice(-40).join('\n')}`);
  }
  expect(failures, failures.join('\n\n')).toEqual([]);
}, 180_000);
