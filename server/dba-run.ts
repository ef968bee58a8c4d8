import { parseArgs } from 'node:util';
import { z } from 'zod';
import { CcaError, exitCodeFor, messageOf, renderPlain, toDiagnostic } from '../core/diagnostics/index.js';
import { redactUrl } from '../core/redact.js';

export const migrateUsage = 'cca migrate --store URL   (env CCA_STORE or DATABASE_URL)';
export const storeUsage = `cca store snapshot --store URL FILE
       cca store restore --store URL FILE [--overwrite]
       cca store copy --from URL --to URL [--overwrite]`;

const url = z.string().min(1, 'a store URL is needed');

/** Run one DBA command, printing its diagnostic (never a stack) on failure; returns the exit code. */
async function guarded(what: string, work: () => Promise<void>): Promise<number> {
  try {
    await work();
    return 0;
  } catch (e) {
    const d = toDiagnostic(e, what);
    console.error(renderPlain(d));
    return exitCodeFor([d]);
  }
}

function parse(argv: string[], options: Record<string, { type: 'string' | 'boolean' }>, usage: string) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new CcaError('CCA-E0157', { reason: messageOf(e).replace(/\. To specify a positional argument.*$/s, ''), usage });
  }
}

function need<T>(schema: z.ZodType<T>, value: unknown, what: string, usage: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new CcaError('CCA-E0157', { reason: `${what}: ${r.error.issues[0]!.message}`, usage });
  return r.data;
}

/** keys copied / total on stderr, at most every tenth of the way (and at the end). */
function progressPrinter(verb: string): (done: number, total: number) => void {
  let shown = -1;
  return (done, total) => {
    const tenth = total === 0 ? 10 : Math.floor((done * 10) / total);
    if (tenth === shown) return;
    shown = tenth;
    console.error(`${verb} ${done} / ${total} keys`);
  };
}

/** `cca migrate`. */
export async function runMigrate(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(`usage: ${migrateUsage}`);
    return 0;
  }
  return guarded('cca migrate', async () => {
    const { values, positionals } = parse(argv, { store: { type: 'string' } }, migrateUsage);
    if (positionals.length > 0) throw new CcaError('CCA-E0157', { reason: `unexpected ${positionals.join(' ')}`, usage: migrateUsage });
    const store = need(url, values.store ?? process.env.CCA_STORE ?? process.env.DATABASE_URL, '--store', migrateUsage);
    const { migrateOnly } = await import('./migrate.js');
    for (const line of await migrateOnly(store)) console.log(line);
  });
}

/** `cca store snapshot|restore|copy`. */
export async function runStore(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(`usage: ${storeUsage}`);
    return 0;
  }
  return guarded('cca store', async () => {
    const { values, positionals } = parse(
      argv,
      { store: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, overwrite: { type: 'boolean' } },
      storeUsage,
    );
    const [verb, file, ...extra] = positionals;
    if (extra.length > 0) throw new CcaError('CCA-E0157', { reason: `unexpected ${extra.join(' ')}`, usage: storeUsage });
    const t = await import('./store-transfer.js');
    const overwrite = values.overwrite === true;
    if (verb === 'snapshot' || verb === 'restore') {
      const store = need(url, values.store ?? process.env.CCA_STORE ?? process.env.DATABASE_URL, '--store', storeUsage);
      const path = need(z.string().min(1, 'name the snapshot FILE'), file, 'FILE', storeUsage);
      if (verb === 'snapshot') {
        const r = await t.snapshotToFile(store, path, progressPrinter('read'));
        console.log(`snapshot of ${redactUrl(store)} at revision ${r.revision}: ${r.keys} keys, ${r.leases} leases → ${path}`);
        if (r.dropped > 0) console.log(`${r.dropped} key(s) left out: their lease expired while the snapshot was taken (the source deleted them too)`);
      } else {
        const r = await t.restoreFromFile(store, path, { overwrite, progress: progressPrinter('restored') });
        console.log(`restored ${path} (source revision ${r.sourceRevision}) into ${redactUrl(store)}: ${r.keys} keys, ${r.leases} leases re-granted, now at revision ${r.revision}`);
      }
      return;
    }
    if (verb === 'copy') {
      if (file !== undefined) throw new CcaError('CCA-E0157', { reason: `unexpected ${file}`, usage: storeUsage });
      const from = need(url, values.from, '--from', storeUsage);
      const to = need(url, values.to, '--to', storeUsage);
      const r = await t.copyStore(from, to, { overwrite, progress: progressPrinter('copied') });
      console.log(`copied ${redactUrl(from)} at revision ${r.sourceRevision} to ${redactUrl(to)}: ${r.keys} keys, ${r.leases} leases re-granted, now at revision ${r.revision}`);
      if (r.dropped > 0) console.log(`${r.dropped} key(s) left out: their lease expired during the copy (the source deleted them too)`);
      return;
    }
    throw new CcaError('CCA-E0157', { reason: verb ? `unknown subcommand ${verb}` : 'name a subcommand: snapshot, restore or copy', usage: storeUsage });
  });
}
