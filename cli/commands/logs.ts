import { logFrameSchema, parseSince, type LogFrame } from '../../core/model/index.js';
import type { CommandArgs, Context } from '../context.js';
import { records } from '../records.js';
import { ExitError, fail } from '../exit.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca logs REPLICA [-f] [--tail N] [--since 10m|TIME] [--previous]'],
  description: 'A replica\'s output, read on its node and relayed by the server: its stdout to stdout, its stderr to stderr.',
  flags: {
    follow: { type: 'boolean', short: 'f', description: 'go on printing what it writes until Ctrl-C (a follow ends by itself after an hour or 32 MiB)' },
    tail: { type: 'string', value: 'N', description: 'the last N lines of each stream' },
    since: { type: 'string', value: 'DURATION|TIME', description: 'what it wrote since then: 10m, 90s, 2h or an RFC 3339 time' },
    previous: { type: 'boolean', description: 'the rotated file: the output before the current file began' },
  },
  outputs: ['plain', 'json'],
  examples: [
    { line: 'cca logs web-3f2a-1 --tail 50 -f', says: 'the last 50 lines, then follow' },
    { line: 'cca logs web-3f2a-1 --since 10m -o json', says: 'the frames of the last ten minutes, one JSON object a line' },
  ],
});
const usage = spec.usage.join(' | ');

/** The query the route takes (core/model/logs.ts), from the flags, checked here first so a typo costs no request. */
function query(values: CommandArgs['values']): URLSearchParams {
  const q = new URLSearchParams();
  if (values.follow === true) q.set('follow', '1');
  if (values.previous === true) q.set('previous', '1');
  if (values.follow === true && values.previous === true) fail('CCA-E0703', { command: 'cca logs', reason: '--previous reads a finished file: it cannot be followed', usage });
  const tail = values.tail as string | undefined;
  if (tail !== undefined) {
    if (!/^\d+$/.test(tail)) fail('CCA-E0703', { command: 'cca logs', reason: `--tail takes a number of lines, not "${tail}"`, usage });
    q.set('tail', tail);
  }
  const since = values.since as string | undefined;
  if (since !== undefined) {
    if (parseSince(since, 0) === undefined) fail('CCA-E0703', { command: 'cca logs', reason: `--since takes a duration (10m, 90s, 2h) or an RFC 3339 time, not "${since}"`, usage });
    q.set('since', since);
  }
  return q;
}

/**
 * A replica's output from its node, relayed by the server (docs/agent.md, "Logs"): stdout to
 * stdout and stderr to stderr, or the frames themselves with -o json; with -f until
 * interrupted or the node's bound ends it.
 */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [replica, ...extra] = positionals;
  if (!replica || extra.length > 0) fail('CCA-E0703', { command: 'cca logs', reason: 'name exactly one replica (`cca get replicas` lists them)', usage });
  const q = query(values);
  const path = `/v1/replicas/${encodeURIComponent(replica)}/logs${q.size > 0 ? `?${q}` : ''}`;
  const signal = ctx.io.signal;
  const client = ctx.client();
  const { body, requestId } = await client.stream(path, signal);
  const show = (f: LogFrame) => {
    if (ctx.globals.output === 'json') ctx.io.stdout.write(`${JSON.stringify(f)}\n`);
    else if ('stream' in f) (f.stream === 'stderr' ? ctx.io.stderr : ctx.io.stdout).write(f.text);
    if ('end' in f) throw new ExitError([{ ...f.end, requestId }]);
  };
  const broke = (reason: string): never => fail('CCA-E0750', { replica, url: client.server, reason }, requestId);
  for await (const line of records(body, '\n', signal, broke)) {
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      raw = undefined;
    }
    const f = logFrameSchema.safeParse(raw);
    if (!f.success) return broke(`unreadable frame ${JSON.stringify(line.slice(0, 80))}`);
    show(f.data);
  }
  if (signal.aborted) return;
  // A follow ends only at a bound (an `end` frame) or on Ctrl-C: anything else broke off.
  if (values.follow === true && !signal.aborted) fail('CCA-E0750', { replica, url: client.server, reason: 'the stream ended without saying why' }, requestId);
}
