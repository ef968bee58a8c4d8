import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { table } from '../render/table.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca token create [--role join|reader|deployer|admin] [--expires 24h] [--uses N] [--name LABEL]', 'cca token list', 'cca token revoke ID'],
  description: 'API tokens (admin only). create prints the token once: only its hash is stored.',
  flags: {
    role: { type: 'string', value: 'ROLE', default: 'join', choices: ['join', 'reader', 'deployer', 'admin'], description: 'what the token may do' },
    expires: { type: 'string', value: 'DURATION', default: 'never', description: 'its lifetime: 90s, 30m, 24h, 7d' },
    uses: { type: 'string', value: 'N', default: 'unlimited', description: 'how many enrollments a join token allows' },
    name: { type: 'string', value: 'LABEL', description: 'a label shown by list' },
  },
  outputs: ['plain', 'json', 'yaml'],
  words: ['create', 'list', 'revoke'],
  examples: [
    { line: 'cca token create --uses 10 --expires 24h', says: 'a join token for a batch of ten machines' },
    { line: 'cca token create --role reader --name dashboards', says: 'a read-only token' },
    { line: 'cca token revoke t-1a2b', says: 'it authenticates as nothing from now on' },
  ],
});
const usage = spec.usage.join(' | ');

const tokenView = z.looseObject({
  id: z.string(),
  role: z.string(),
  name: z.string(),
  createdAt: z.number(),
  expiresAt: z.number().nullable(),
  usesLeft: z.number().nullable(),
  state: z.string(),
});
const created = tokenView.extend({ token: z.string() });
const listing = z.looseObject({ revision: z.number(), tokens: z.array(tokenView) });

const UNIT = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** `24h`, `30m`, `7d`, `90s` → seconds. */
export function parseExpiry(s: string): number | undefined {
  const m = /^(\d+)(s|m|h|d)$/.exec(s.trim());
  const n = m ? Number(m[1]) * UNIT[m[2] as keyof typeof UNIT] : 0;
  return n > 0 ? n : undefined;
}

const when = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'));

/**
 * API tokens (admin): create one (printed once, never again: only its hash is stored),
 * list them (never the token), revoke one.
 */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [verb, ...rest] = positionals;
  const bad = (reason: string): never => fail('CCA-E0703', { command: 'cca token', reason, usage });
  const json = structured(ctx.globals);
  if (verb === 'create') {
    if (rest.length > 0) bad(`create takes flags only, not "${rest.join(' ')}"`);
    const role = (values.role as string | undefined) ?? 'join';
    if (!['join', 'reader', 'deployer', 'admin'].includes(role)) bad(`--role must be join, reader, deployer or admin, not "${role}"`);
    const body: Record<string, unknown> = { role };
    if (values.expires !== undefined) body.expiresInSeconds = parseExpiry(String(values.expires)) ?? bad(`--expires must look like 90s, 30m, 24h or 7d, not "${values.expires}"`);
    if (values.uses !== undefined) {
      const n = Number(values.uses);
      if (!Number.isInteger(n) || n < 1) bad(`--uses must be a whole number of at least 1, not "${values.uses}"`);
      if (role !== 'join') bad('--uses counts enrollments: only a join token has it');
      body.uses = n;
    }
    if (values.name !== undefined) body.name = String(values.name);
    const r = await ctx.client().json('POST', '/v1/tokens', created, body);
    if (json) return printData(ctx, r);
    ctx.io.stdout.write(
      `${r.token}\n\n` +
        `token ${r.id} (${r.role}${r.name ? `, "${r.name}"` : ''}) created; expires ${when(r.expiresAt)}; uses ${r.usesLeft ?? 'unlimited'}.\n` +
        'This is the only time it is shown: only its hash is stored.\n',
    );
    return;
  }
  if (verb === 'list') {
    if (rest.length > 0) bad('list takes no arguments');
    const r = await ctx.client().json('GET', '/v1/tokens', listing);
    if (json) return printData(ctx, r);
    const rows = r.tokens.map((t) => [t.id, t.role, t.name || '-', when(t.createdAt), when(t.expiresAt), t.usesLeft === null ? 'unlimited' : String(t.usesLeft), t.state]);
    ctx.io.stdout.write(`${table(['ID', 'ROLE', 'NAME', 'CREATED', 'EXPIRES', 'USES LEFT', 'STATE'], rows)}\n`);
    return;
  }
  if (verb === 'revoke') {
    const [id, ...extra] = rest;
    if (!id || extra.length > 0) return bad('name exactly one token id (see `cca token list`)');
    const r = await ctx.client().json('POST', `/v1/tokens/${encodeURIComponent(id)}/revoke`, tokenView);
    if (json) return printData(ctx, r);
    ctx.io.stdout.write(`token ${r.id} (${r.role}) revoked: it authenticates as nothing from now on\n`);
    return;
  }
  bad(verb !== undefined ? `unknown action "${verb}"` : 'say create, list or revoke');
}
