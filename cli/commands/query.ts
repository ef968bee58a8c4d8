import { z } from 'zod';
import { layout, type KeyKind } from '../../core/keys.js';
import { checkQuery, kindNames, parsePredicates } from '../../core/query.js';
import type { CommandArgs, Context } from '../context.js';
import { ExitError, fail } from '../exit.js';
import { follow } from '../follow.js';
import { formatData, structured } from '../output.js';
import { table } from '../render/table.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ["cca query KIND ['field=value,field!=value,field<n,field>n,field^=prefix,field?,field in (a|b)'] [--select f1,f2] [--limit N] [-w] [-o plain|wide|json|yaml|name]"],
  description: 'The facts of one kind (a prefix of docs/keys.md) matching every predicate, checked locally before anything is sent.',
  flags: {
    watch: { type: 'boolean', short: 'w', description: 'print the matches again after each change that alters them' },
    select: { type: 'string', value: 'F1,F2', description: 'show these fields as columns (the key\'s segments come first)' },
    limit: { type: 'string', value: 'N', default: '100', description: 'the most facts shown, 1 to 10000; says when more match' },
  },
  outputs: ['plain', 'wide', 'json', 'yaml', 'name'],
  words: ['replicas', 'nodes', 'services', 'assigned', 'observed', 'node-status', 'observed-volumes'],
  examples: [
    { line: "cca query replicas 'service=web,desired!=stop'", says: 'the running-or-wanted replicas of web' },
    { line: "cca query observed 'state in (failed|exited)' --select state,exitCode", says: 'what failed, two columns' },
    { line: 'cca query nodes -o name', says: 'every node fact\'s key' },
  ],
});
const usage = spec.usage.join(' | ');

const answerSchema = z.object({
  kind: z.string(),
  revision: z.int(),
  items: z.array(z.object({ key: z.string(), createRevision: z.int(), modRevision: z.int(), version: z.int(), fact: z.record(z.string(), z.unknown()) })),
  more: z.boolean(),
  after: z.string().optional(),
});
type Item = z.output<typeof answerSchema>['items'][number];

export interface QueryResult {
  kind: KeyKind;
  revision: number;
  items: Item[];
  /** More matches may exist beyond --limit. */
  truncated: boolean;
}

/** The kinds' names as the CLI shows them: their prefixes' (replicas, node-status, auth/tokens…). */
const shownKinds = () => (Object.keys(layout) as KeyKind[]).map((k) => layout[k].prefix.slice(1, -1)).join(', ');

function parseLimit(given: unknown): number {
  if (given === undefined) return 100;
  const n = Number(given);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) fail('CCA-E0771', { option: '--limit', value: String(given), reason: 'not a whole number from 1 to 10000' });
  return n;
}

/** KIND, predicates and --select checked here with core/query.ts: a bad query never reaches the server. */
function parse(positionals: string[], values: CommandArgs['values']) {
  const [given, expr, ...extra] = positionals;
  if (given === undefined) fail('CCA-E0703', { command: 'cca query', reason: 'name a kind of fact: cca query KIND [PREDICATES]', usage });
  if (extra.length > 0) fail('CCA-E0703', { command: 'cca query', reason: `unexpected "${extra.join(' ')}" (join predicates with commas, in one quoted argument)`, usage });
  const kind = kindNames().get(given.toLowerCase());
  if (!kind) fail('CCA-E0770', { kind: given, kinds: shownKinds() });
  const parsed = expr === undefined ? { ok: true as const, value: [] } : parsePredicates(expr);
  if (!parsed.ok) throw new ExitError(parsed.diagnostics);
  const select = typeof values.select === 'string' ? values.select.split(',').map((s) => s.trim()) : undefined;
  if (select?.some((s) => s === '')) fail('CCA-E0771', { option: '--select', value: String(values.select), reason: 'an empty field name' });
  const located = (i: number) => ({ at: `predicate ${i + 1} at column ${parsed.value[i]!.column}`, text: `(${parsed.value[i]!.text})` });
  const checked = checkQuery(kind, parsed.value.map((p) => p.raw), select, located);
  if (!checked.ok) throw new ExitError(checked.diagnostics);
  return { kind, where: parsed.value.map((p) => p.raw), select, limit: parseLimit(values.limit) };
}

/** Every matching fact up to `limit`, page by page at the first page's revision. */
async function runQuery(ctx: Context, q: ReturnType<typeof parse>): Promise<QueryResult> {
  const items: Item[] = [];
  let revision = 0;
  let after: string | undefined;
  for (;;) {
    const body = { prefix: layout[q.kind].prefix, where: q.where, ...(q.select ? { select: q.select } : {}), revision, limit: Math.min(1000, q.limit - items.length + 1), ...(after ? { after } : {}) };
    const page = await ctx.client().json('QUERY', '/v1/state', answerSchema, body);
    revision = page.revision;
    items.push(...page.items);
    // One match beyond --limit is asked for, so "there are more" is known, not guessed.
    if (items.length > q.limit) return { kind: q.kind, revision, items: items.slice(0, q.limit), truncated: true };
    if (!page.more || page.after === undefined) return { kind: q.kind, revision, items, truncated: false };
    after = page.after;
  }
}

const cell = (v: unknown): string => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

function show(ctx: Context, r: QueryResult, select: string[] | undefined, watching: boolean): string {
  if (structured(ctx.globals)) {
    const l = { kind: r.kind, revision: r.revision, truncated: r.truncated, items: r.items.map((i) => ({ key: i.key, modRevision: i.modRevision, fact: i.fact })) };
    if (ctx.globals.output === 'yaml') return `${watching ? '---\n' : ''}${formatData('yaml', l).trimEnd()}`;
    return watching ? JSON.stringify(l) : JSON.stringify(l, null, 2);
  }
  // Each fact's key without its leading slash: the kind's prefix, then what names it.
  if (ctx.globals.output === 'name') return r.items.map((i) => i.key.slice(1)).join('\n');
  if (r.items.length === 0) return `no ${layout[r.kind].prefix.slice(1, -1)} match`;
  const wide = ctx.globals.output === 'wide';
  const params = [...layout[r.kind].params] as string[];
  // The key's segments first (what names each fact), but not twice when --select names one.
  const keyCols = params.map((p, i) => [p, i] as const).filter(([p]) => !select?.includes(p));
  const segs = (key: string) => key.slice(layout[r.kind].prefix.length).split('/');
  const headers = [...keyCols.map(([p]) => p), ...(select ?? ['fact'])].map((h) => h.toUpperCase());
  const rows = r.items.map((i) => {
    const shown = select ? select.map((c) => cell(i.fact[c])) : [compact(i.fact, params, wide)];
    const s = segs(i.key);
    return [...keyCols.map(([, n]) => s[n] ?? ''), ...shown];
  });
  const more = r.truncated ? `\n(more match: raise --limit ${r.items.length})` : '';
  return table(headers, rows) + more;
}

/** Without --select, the fact minus what the key's columns already say, as one JSON line. */
function compact(fact: Record<string, unknown>, params: string[], wide: boolean): string {
  const rest = Object.fromEntries(Object.entries(fact).filter(([k]) => !params.includes(k)));
  const text = JSON.stringify(rest);
  return wide || text.length <= 100 ? text : `${text.slice(0, 99)}…`;
}

/** Matching facts as a table (or JSON); with -w, again after every change to the kind. */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const q = parse(positionals, values);
  const watching = values.watch === true;
  const first = await runQuery(ctx, q);
  let last = show(ctx, first, q.select, watching);
  if (last !== '') ctx.io.stdout.write(`${last}\n`);
  if (!watching) return;
  const strip = (s: string) => s.replace(/"revision":\d+/, '');
  await follow(ctx, {
    from: first.revision + 1,
    prefix: layout[q.kind].prefix,
    signal: ctx.io.signal,
    refresh: async () => {
      const r = await runQuery(ctx, q);
      const text = show(ctx, r, q.select, true);
      if (strip(text) === strip(last)) return false;
      last = text;
      if (structured(ctx.globals)) ctx.io.stdout.write(`${text}\n`);
      else if (ctx.io.stdout.isTTY) ctx.io.stdout.write(`\u001b[H\u001b[2J${text}\n`);
      else ctx.io.stdout.write(`\n# revision ${r.revision}\n${text}\n`);
      return false;
    },
  });
}
