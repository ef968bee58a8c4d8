import { expect, test } from 'vitest';
import { runDemoC1 } from '../../demo/c1.js';

test('demo-c1: three real agents; node3 dies and returns, node2 is partitioned; no overlap seen from the running processes', async () => {
  const lines: string[] = [];
  // The narrative is printed as it goes, pass or fail: a failure's evidence is in it, and a
  // run that exceeds the test's timeout (which never reaches a finally) still shows its steps.
  await runDemoC1({ say: (l) => (lines.push(l), console.log(l)) });
  expect(lines.at(-1)?.trim()).toMatch(/^demo-c1 passed in \d+ s\.$/);
}, 240_000);
