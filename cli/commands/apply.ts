import { parseFiles } from '../../core/lang/index.js';
import { parseDuration } from '../../core/model/logs.js';
import { applyAnswer, type ApplyAnswer } from '../api.js';
import type { CommandArgs, Context } from '../context.js';
import { confirm } from '../confirm.js';
import { currentVolumes, describeReleases, releasedBy } from '../volume-release.js';
import { ExitError, fail } from '../exit.js';
import { readSources } from '../files.js';
import { printJson } from '../output.js';
import { hasChanges, renderPlan, summary } from '../render/diff.js';
import { waitConverged } from '../wait.js';

export const usage = 'cca apply FILE|DIR… [--dry-run] [--yes] [--prune] [--wait [--timeout 5m]]';
export const options = {
  yes: { type: 'boolean', short: 'y' },
  'dry-run': { type: 'boolean' },
  prune: { type: 'boolean' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
} as const;


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
  const json = ctx.globals.output === 'json';
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
    if (json) printJson(ctx.io, { ...dry, applied: false });
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
  if (json && !values.wait) printJson(ctx.io, { ...done, applied: true });
  else if (!json) ctx.io.stdout.write(`applied at revision ${done.revision}\n`);
  if (values.wait) return await waitFor(ctx, done, timeoutMs, json);
}

async function waitFor(ctx: Context, applied: ApplyAnswer, timeoutMs: number, json: boolean): Promise<void | number> {
  const names = [...applied.plan.added, ...applied.plan.changed.map((c) => c.name), ...applied.plan.unchanged];
  const r = await waitConverged(ctx, { names, removed: applied.plan.removed, from: applied.revision, timeoutMs });
  if (json) printJson(ctx.io, { ...applied, applied: !applied.dryRun, converged: r.services });
  if (r.interrupted) return 130;
}
