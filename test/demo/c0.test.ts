import { expect, test } from 'vitest';
import { runDemoC0 } from '../../demo/c0.js';

test.each(['postgres', 'etcd', 'sqlite'] as const)(
  'demo-c0 on %s: real server, agent and cca processes through kill, scale, unknown image, restarts, a store outage and a bundle',
  async (store) => {
    const lines: string[] = [];
    await runDemoC0({ store, say: (l) => lines.push(l) });
    console.log(lines.join('\n'));
    expect(lines.at(-1)?.trim()).toBe('demo-c0 passed.');
  },
  300_000,
);
