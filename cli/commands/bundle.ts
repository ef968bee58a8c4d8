import { writeFile } from 'node:fs/promises';
import { z } from 'zod';
import { resolve } from 'node:path';
import { toJson, type Diagnostic } from '../../core/diagnostics/index.js';
import { healthAnswer } from '../api.js';
import type { Client } from '../client.js';
import type { CommandArgs, Context } from '../context.js';
import { ExitError, fail } from '../exit.js';
import { reason } from '../files.js';
import { readJournal } from '../journal.js';
import { printData, structured } from '../output.js';
import { redactDeep } from '../../core/keys.js';
import { redactText, redactUrl } from '../../core/redact.js';
import { tarGz, type TarEntry } from '../tar.js';
import { cliVersion } from './version.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca bundle [--last] [-o FILE]'],
  description: 'A redacted .tar.gz of evidence for a bug report, written locally (mode 0600) and sent nowhere. -o names the file unless it is an output mode.',
  flags: {
    last: { type: 'boolean', description: 'only the last command\'s requests' },
    file: { type: 'string', short: 'f', value: 'FILE', default: 'cca-bundle-TIME.tar.gz', description: 'the file to write' },
  },
  fileFlag: 'file',
  examples: [
    { line: 'cca bundle --last', says: 'the evidence around the last command' },
    { line: 'cca bundle -o report.tar.gz', says: 'choose the file' },
  ],
});
const usage = spec.usage.join(' | ');

/** The newest decisions kept in a bundle, chosen from at most PAGES pages of the store. */
const DECISIONS = 500;
const PAGE = 1000;
const PAGES = 10;
const stateAnswer = z.looseObject({
  revision: z.number(),
  more: z.boolean(),
  kvs: z.array(z.looseObject({ key: z.string(), value: z.string(), modRevision: z.number() })),
});
type Kv = z.output<typeof stateAnswer>['kvs'][number];

/**
 * Decision keys sort by subject, not time, so the newest ones are found by reading the
 * prefix page by page at one revision and keeping the highest mod revisions.
 */
async function recentDecisions(client: Client): Promise<Kv[]> {
  const prefix = encodeURIComponent('/decisions/');
  let kvs: Kv[] = [];
  let revision = 0;
  let after: string | undefined;
  for (let page = 0; page < PAGES; page++) {
    const q = `prefix=${prefix}&limit=${PAGE}&revision=${revision}${after ? `&after=${encodeURIComponent(after)}` : ''}`;
    const r = await client.json('GET', `/v1/state?${q}`, stateAnswer);
    revision = r.revision;
    kvs = kvs.concat(r.kvs).sort((a, b) => b.modRevision - a.modRevision).slice(0, DECISIONS);
    if (!r.more || r.kvs.length === 0) break;
    after = r.kvs[r.kvs.length - 1]!.key;
  }
  return kvs;
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/**
 * Evidence for a bug report, in one local file: versions, the recent requests with their
 * IDs and diagnostics, recent decisions, node, replica and service states, the server's
 * metrics. Everything is redacted before it is written; nothing is sent anywhere. What
 * cannot be collected (the server is down) is recorded in errors.json, and the bundle is
 * still written.
 */
export async function run(ctx: Context, { values }: CommandArgs): Promise<void> {
  // `-o FILE` reads naturally for a bundle; the global -o (output mode) keeps its meaning when it is one.
  const outFlag = values.file as string | undefined;
  const mode = ctx.globals.output;
  const now = ctx.io.now();
  const dir = `cca-bundle-${stamp(now)}`;
  const target = resolve(ctx.io.cwd, outFlag ?? `${dir}.tar.gz`);
  const client = ctx.client();
  const errors: { what: string; diagnostic: unknown }[] = [];
  const collect = async <T>(what: string, get: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await get();
    } catch (e) {
      if (!(e instanceof ExitError)) throw e;
      errors.push({ what, diagnostic: toJson(e.diagnostics[0] as Diagnostic) });
      return undefined;
    }
  };
  const journal = await readJournal(ctx.io.env);
  const requests = values.last ? journal.slice(-1) : journal.slice(-50);
  const health = await collect('server version (/healthz)', () => client.json('GET', '/healthz', healthAnswer));
  const reachable = health !== undefined;
  const get = <S extends z.ZodType>(what: string, path: string, schema: S) => (reachable ? collect(what, () => client.json('GET', path, schema)) : Promise.resolve(undefined));
  const decisions = reachable ? await collect('recent decisions', () => recentDecisions(client)) : undefined;
  const nodes = await get('nodes', '/v1/nodes', z.unknown());
  const replicas = await get('replicas', '/v1/replicas?all=1', z.unknown());
  const services = await get('services', '/v1/services', z.unknown());
  const metrics = reachable ? await collect('metrics', () => client.text('/metrics')) : undefined;
  const literals = ctx.globals.token ? [ctx.globals.token] : [];
  const json = (v: unknown) => redactText(`${JSON.stringify(redactDeep(v, 'evidence'), null, 2)}\n`, literals);
  const files: TarEntry[] = [
    {
      name: 'versions.json',
      data: json({ cli: await cliVersion(), node: process.version, platform: `${process.platform}-${process.arch}`, server: { url: redactUrl(client.server), version: health?.version ?? null } }),
    },
    { name: 'requests.json', data: json(requests) },
    { name: 'decisions.json', data: json(decisions?.map((kv) => ({ key: kv.key, modRevision: kv.modRevision, decision: parseOr(kv.value) })) ?? null) },
    { name: 'nodes.json', data: json(nodes ?? null) },
    { name: 'replicas.json', data: json(replicas ?? null) },
    { name: 'services.json', data: json(services ?? null) },
    { name: 'metrics.txt', data: redactText(metrics ?? '# not collected: see errors.json\n', literals) },
    { name: 'errors.json', data: json(errors) },
    {
      name: 'README.txt',
      data: [
        `cca bundle made at ${new Date(now).toISOString()} against ${client.server}.`,
        'Before writing: secret values, env values, config file contents, credentials, URL passwords and',
        'token-shaped text were replaced by (redacted) (env values and configs by their length). Other',
        'text (commands, names, reasons, workload output in init tails) is as the server gave it: read it',
        'before you attach it.',
        'This file was written locally and sent nowhere; attach it to a bug report yourself.',
        '',
      ].join('\n'),
    },
  ].map((f) => ({ ...f, name: `${dir}/${f.name}` }));
  try {
    await writeFile(target, tarGz(files, now), { mode: 0o600 });
  } catch (e) {
    fail('CCA-E0714', { file: target, reason: reason(e) });
  }
  const summary = { file: target, entries: files.map((f) => f.name), requests: requests.length, decisions: decisions?.length ?? 0, errors };
  if (structured(ctx.globals)) printData(ctx, summary);
  else {
    ctx.io.stdout.write(`wrote ${target}\n${files.map((f) => `  ${f.name}`).join('\n')}\n`);
    ctx.io.stdout.write(`${requests.length} recent command(s), ${summary.decisions} decision(s); secrets and tokens redacted; nothing was sent anywhere\n`);
    for (const e of errors) ctx.io.stdout.write(`not collected: ${e.what} (${(e.diagnostic as { code: string }).code})\n`);
  }
}

/** A stored value as JSON when it is JSON, else as the text it is. */
function parseOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
