import type { Context } from 'hono';
import { CcaError } from '../core/diagnostics/index.js';

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
    throw new CcaError('CCA-E0601', { format: 'JSON', reason: e instanceof Error ? e.message : String(e) });
  }
}
