import type { Context } from 'hono';
import { z } from 'zod';
import { CcaError, messageOf } from '../core/diagnostics/index.js';

/** The request body as JSON; bad JSON is a coded 400, never a parser stack trace. */
export async function jsonBody(c: Context): Promise<unknown> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/json\b/i.test(type)) {
    throw new CcaError('CCA-E0607', { contentType: type || 'no content type', accepted: 'application/json' });
  }
  const text = await c.req.text();
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CcaError('CCA-E0601', { format: 'JSON', reason: messageOf(e) });
  }
}

/** A parsed JSON body checked against its schema; the first problem is a coded 400 naming the field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  throw new CcaError('CCA-E0603', { where: `the body${issue.path.length ? ` at ${issue.path.join('.')}` : ''}`, reason: issue.message });
}
