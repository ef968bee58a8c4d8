import { expect, onTestFailed, test } from 'vitest';
import { runDemoC1 } from '../../demo/c1.js';

test('demo-c1: three real agents; node3 dies and returns, node2 is partitioned; no overlap seen from the running processes', async () => {
  const lines: string[] = [];
  // The narrative is printed pass or fail (a failure's evidence is in it), also when the run
  // exceeds the test's timeout, which never reaches a finally but does run onTestFailed.
  let printed = false;
  const print = () => void (printed || ((printed = true), console.log(lines.join('\n'))));
  onTestFailed(print);
  await runDemoC1({ say: (l) => lines.push(l) });
  print();
  expect(lines.at(-1)?.trim()).toMatch(/^demo-c1 passed in \d+ s\.$/);
}, 240_000);
