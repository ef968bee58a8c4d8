import { expect, onTestFailed, test } from 'vitest';
import { runDemoC0, SQLITE_NO_OUTAGE } from '../../demo/c0.js';

const steps = 'real server, agent and cca processes through kill, scale, unknown image, restarts';

test.each([
  ['postgres', `${steps}, a store outage and a bundle`, 'demo-c0 passed.'],
  ['etcd', `${steps}, a store outage and a bundle`, 'demo-c0 passed.'],
  // Step 7 (the store outage) does not run on SQLite; the title and the last line say so.
  ['sqlite', `${steps} and a bundle; NOT the store outage (step 7 does not run: ${SQLITE_NO_OUTAGE})`, 'demo-c0 passed, except step 7 (the store outage), which did not run.'],
] as const)(
  'demo-c0 on %s: %s',
  async (store, _title, last) => {
    const lines: string[] = [];
    // The narrative is printed pass or fail (a failure's evidence is in it), also when the run
    // exceeds the test's timeout, which never reaches a finally but does run onTestFailed.
    let printed = false;
    const print = () => void (printed || ((printed = true), console.log(lines.join('\n'))));
    onTestFailed(print);
    await runDemoC0({ store, say: (l) => lines.push(l) });
    print();
    expect(lines.at(-1)?.trim()).toBe(last);
  },
  300_000,
);
