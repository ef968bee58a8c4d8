import type { Context } from 'hono';
import { z } from 'zod';
import { CcaError } from '../core/diagnostics/index.js';

/** Parse query parameters with zod; a bad one is a coded 400 naming the parameter. */
export function parseQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  const r = schema.safeParse(c.req.query());
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  throw new CcaError('CCA-E0603', { where: `query parameter ${issue.path.join('.') || '(none)'}`, reason: issue.message });
}

export const revisionParam = z.coerce.number().int().min(0);
