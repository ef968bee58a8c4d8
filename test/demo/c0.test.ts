import { expect, test } from 'vitest';
import { runDemoC0 } from '../../demo/c0.js';

test('demo-c0: real server, agent and cca processes through kill, scale, unknown image, restarts, a store outage and a bundle', async () => {
  const lines: string[] = [];
  await runDemoC0({ say: (l) => lines.push(l) });
  console.log(lines.join('\n'));
  expect(lines.at(-1)?.trim()).toBe('demo-c0 passed.');
}, 240_000);

test('demo-c0 on SQLite: the same steps (no store outage) with the server on a SQLite file', async () => {
  const lines: string[] = [];
  await runDemoC0({ say: (l) => lines.push(l), store: 'sqlite' });
  console.log(lines.join('\n'));
  expect(lines.at(-1)?.trim()).toBe('demo-c0 passed.');
}, 240_000);

test('demo-c0 on etcd: the same steps (no store outage) with the server on an etcd of its own', async () => {
  const lines: string[] = [];
  await runDemoC0({ say: (l) => lines.push(l), store: 'etcd' });
  console.log(lines.join('\n'));
  expect(lines.at(-1)?.trim()).toBe('demo-c0 passed.');
}, 240_000);
