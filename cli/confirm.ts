import type { Context } from './context.js';
import { fail } from './exit.js';

/** Ask before a change: --yes skips it; without a terminal to ask on, it is a coded error, never a silent yes. */
export async function confirm(ctx: Context, action: string, yes: boolean): Promise<void> {
  if (yes) return;
  if (!ctx.io.stdinIsTTY) fail('CCA-E0704', { action });
  const answer = await ctx.io.prompt(`go ahead with ${action}? [y/N] `);
  if (!/^y(es)?$/i.test(answer.trim())) fail('CCA-E0711', { action });
}
