/**
 * A load-generator process for bench:server: `watchers` SSE watches on the pod (each with its
 * own connection, spread over the tokens given), read with the streaming scanner. It is told
 * each write's commit time (the machine's monotonic clock) and counts, per watcher, the batch
 * frames received, their order, and commit → event latency.
 * Messages in: `commits` (revision, time pairs), `report`, `stop`. Out: `ready`, `report`.
 */
import http from 'node:http';
import { z } from 'zod';
import { monoMs } from './clock.js';
import { record, type Histogram } from './latency.js';
import { SseScanner } from './sse.js';
import { WORKER_CONFIG } from './workers.js';

const config = z
  .strictObject({
    url: z.string().url(),
    tokens: z.array(z.string().min(1)).min(1),
    prefix: z.string(),
    from: z.number().int().positive(),
    watchers: z.number().int().positive(),
  })
  .parse(JSON.parse(process.env[WORKER_CONFIG] ?? 'null'));
const message = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('commits'), commits: z.array(z.tuple([z.number(), z.number()])) }),
  z.strictObject({ type: z.literal('report') }),
  z.strictObject({ type: z.literal('stop') }),
]);

const commits = new Map<number, number>();
/** Frames that arrived before their commit time did: revision → arrival times. */
const early = new Map<number, number[]>();
const latency: Histogram = {};
const frames: number[] = Array.from({ length: config.watchers }, () => 0);
let outOfOrder = 0;
let errors = 0;
let opened = 0;
let retries = 0;
let stopping = false;
const requests: http.ClientRequest[] = [];
const send = (m: object) => process.send?.(m);

function arrived(revision: number, at: number): void {
  const c = commits.get(revision);
  if (c !== undefined) record(latency, at - c);
  else early.set(revision, [...(early.get(revision) ?? []), at]);
}

function watch(i: number, attempt = 0): void {
  const token = config.tokens[i % config.tokens.length]!;
  let last = 0;
  let open = false;
  const scanner = new SseScanner(({ id, event }) => {
    if (event === 'open') {
      open = true;
      if (++opened === config.watchers) send({ type: 'ready' });
      return;
    }
    if (event === 'error') errors++;
    if (event !== 'batch') return;
    const at = monoMs();
    const revision = Number(id);
    if (revision <= last) outOfOrder++;
    last = revision;
    frames[i]!++;
    arrived(revision, at);
  });
  const req = http.get(`${config.url}/v1/watch?prefix=${encodeURIComponent(config.prefix)}&from=${config.from}`, { headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
    if (res.statusCode !== 200) {
      errors++;
      process.stderr.write(`watch ${i}: HTTP ${res.statusCode}\n`);
    }
    res.on('data', (chunk: Buffer) => scanner.push(chunk));
    res.on('error', () => undefined);
  });
  // A connection that failed before its stream opened (refused or reset by a loaded pod) is
  // tried again; one that failed later is counted: its missing events show in the report.
  req.on('error', () => {
    if (open || stopping) return void errors++;
    retries++;
    setTimeout(() => watch(i, attempt + 1), Math.min(5_000, 250 * 2 ** attempt));
  });
  requests.push(req);
}

process.on('message', (raw) => {
  const m = message.parse(raw);
  if (m.type === 'commits') {
    for (const [revision, at] of m.commits) {
      commits.set(revision, at);
      for (const t of early.get(revision) ?? []) record(latency, t - at);
      early.delete(revision);
    }
  } else if (m.type === 'report') {
    send({ type: 'report', frames: frames.reduce((a, b) => a + b, 0), fewest: Math.min(...frames), outOfOrder, errors, retries, latency });
  } else {
    stopping = true;
    for (const r of requests) r.destroy();
    process.disconnect?.();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));

for (let i = 0; i < config.watchers; i++) watch(i);
