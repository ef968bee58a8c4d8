import { parseFiles } from '../../core/lang/index.js';
import { parseDuration } from '../../core/model/logs.js';
import { applyAnswer, type ApplyAnswer } from '../api.js';
import type { CommandArgs, Context } from '../context.js';
import { confirm } from '../confirm.js';
import { currentVolumes, describeReleases, releasedBy } from '../volume-release.js';
import { ExitError, fail } from '../exit.js';
import { readSources } from '../files.js';
import { printData, structured } from '../output.js';
import { hasChanges, renderPlan, summary } from '../render/diff.js';
import { waitConverged } from '../wait.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca apply FILE|DIR… [--dry-run] [--yes] [--prune] [--wait [--timeout 5m]]'],
  description: 'Parses the files locally (nothing is sent while one has an error), shows the server\'s dry-run diff, asks, applies, and with --wait follows until the services converge.',
  flags: {
    yes: { type: 'boolean', short: 'y', description: 'apply without asking (needed when standard input is not a terminal)' },
    'dry-run': { type: 'boolean', description: 'only show the diff' },
    prune: { type: 'boolean', description: 'also delete the services these files no longer declare' },
    wait: { type: 'boolean', description: 'then wait until every applied service has all its replicas running and ready' },
    timeout: { type: 'string', value: 'DURATION', default: '5m', description: 'how long --wait waits (90s, 5m, 1h)' },
  },
  examples: [
    { line: 'cca apply fixtures/hello.cca', says: 'show the diff, ask, apply' },
    { line: 'cca apply services/ --prune --yes --wait --timeout 10m', says: 'a folder, in CI: no question, deletions included, wait for convergence' },
    { line: 'cca apply web.cca --dry-run -o json', says: 'the diff as JSON, nothing applied' },
  ],
});
const usage = spec.usage.join(' | ');


// One parser for every duration flag (core/model/logs.ts); re-exported for the commands that import it from here.
export { parseDuration };

/**
 * Parse locally (nothing is sent while a file has an error), show the server's dry-run
 * diff, confirm, apply, and with --wait follow until the services converge.
 */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void | number> {
  if (positionals.length === 0) fail('CCA-E0703', { command: 'cca apply', reason: 'name at least one .cca file or directory', usage });
  const timeoutMs = parseDuration((values.timeout as string | undefined) ?? '5m');
  if (timeoutMs === undefined) fail('CCA-E0703', { command: 'cca apply', reason: `--timeout must look like 90s, 5m or 1h, not "${values.timeout}"`, usage });
  const files = await readSources(ctx.io.cwd, positionals);
  const sources = new Map(files.map((f) => [f.name, f.text]));
  // `after` may name services that exist only on the server: the server checks those.
  const local = parseFiles(files, { existing: 'unchecked' });
  if (local.diagnostics.length > 0) throw new ExitError(local.diagnostics, sources);
  const json = structured(ctx.globals);
  const send = async (dryRun: boolean) => {
    const q = [dryRun ? 'dry_run=1' : '', values.prune ? 'prune=1' : ''].filter(Boolean).join('&');
    try {
      return await ctx.client().json('POST', `/v1/apply${q ? `?${q}` : ''}`, applyAnswer, { files: files.map((f) => ({ name: f.name, text: f.text })) });
    } catch (e) {
      // The server's spec problems point into our files: show them with their lines.
      throw e instanceof ExitError ? new ExitError(e.diagnostics, sources) : e;
    }
  };
  const dry = await send(true);
  if (!json) ctx.io.stdout.write(`${renderPlan(dry.plan, ctx.color)}\n`);
  const changes = hasChanges(dry.plan);
  if (values['dry-run'] || !changes) {
    if (!json && !changes) ctx.io.stdout.write('nothing to apply\n');
    // Nothing changed, but the services may still be converging: --wait waits for them.
    if (!changes && values.wait && !values['dry-run']) return await waitFor(ctx, dry, timeoutMs, json);
    if (json) printData(ctx, { ...dry, applied: false });
    return;
  }
  const declared = new Map(local.services.map((s) => [s.name, new Set(s.volumes.map((v) => v.name))]));
  const releases = releasedBy(await currentVolumes(ctx), new Set(dry.plan.removed), declared);
  if (releases.length > 0 && !json) ctx.io.stdout.write(describeReleases(releases));
  await confirm(ctx, `applying these changes (${summary(dry.plan)}${releases.length > 0 ? `, releasing ${releases.length} volume(s)` : ''})`, values.yes === true);
  const done = await send(false);
  // The server may have changed between the diff and the apply: never let a confirmation stand for a different change.
  if (JSON.stringify(done.plan) !== JSON.stringify(dry.plan)) {
    ctx.io.stderr.write(`warning: the services changed on the server after the diff was shown; what was applied:\n${renderPlan(done.plan, false)}\n`);
  }
  if (json && !values.wait) printData(ctx, { ...done, applied: true });
  else if (!json) ctx.io.stdout.write(`applied at revision ${done.revision}\n`);
  if (values.wait) return await waitFor(ctx, done, timeoutMs, json);
}

async function waitFor(ctx: Context, applied: ApplyAnswer, timeoutMs: number, json: boolean): Promise<void | number> {
  const names = [...applied.plan.added, ...applied.plan.changed.map((c) => c.name), ...applied.plan.unchanged];
  const r = await waitConverged(ctx, { names, removed: applied.plan.removed, from: applied.revision, timeoutMs });
  if (json) printData(ctx, { ...applied, applied: !applied.dryRun, converged: r.services });
  if (r.interrupted) return 130;
}
