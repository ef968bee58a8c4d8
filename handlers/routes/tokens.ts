import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import { tokenRoleSchema } from '../../core/model/auth.js';
import { requireRole, type AuthEnv } from '../auth.js';
import { jsonBody, parseBody } from '../body.js';
import type { ServerDeps } from '../deps.js';
import { createToken, listTokens, revokeToken } from '../identity.js';

const createBody = z
  .strictObject({
    role: tokenRoleSchema.default('join'),
    name: z.string().min(1).max(100).optional(),
    /** Up to a year: a token that never expires is one without this field. */
    expiresInSeconds: z.int().min(1).max(366 * 24 * 3600).optional(),
    uses: z.int().min(1).max(1_000_000).optional(),
  })
  // Uses count enrollments; counting every read of a reader token would make each request a write.
  .refine((b) => b.uses === undefined || b.role === 'join', { message: 'only a join token has a use count (it counts enrollments)', path: ['uses'] });

const tokenId = z.string().regex(/^[0-9a-f]{12}$|^(admin|join)$/, 'must be a token id from `cca token list`');

/** `/v1/tokens`: admins issue, list and revoke API tokens. The token itself is shown once, at creation. */
export function tokenRoutes(deps: ServerDeps) {
  const { store } = deps;
  return new Hono<AuthEnv>()
    .post('/v1/tokens', requireRole('admin'), async (c) => {
      const body = parseBody(createBody, await jsonBody(c));
      const { token, view, revision } = await createToken(store, body);
      return c.json({ ...view, token, revision });
    })
    .get('/v1/tokens', requireRole('admin'), async (c) => c.json(await listTokens(store)))
    .post('/v1/tokens/:id/revoke', requireRole('admin'), async (c) => {
      const id = c.req.param('id');
      // An id that could never have been issued is simply unknown.
      if (!tokenId.safeParse(id).success) throw new CcaError('CCA-E0637', { id });
      const { revision, view } = await revokeToken(store, id);
      return c.json({ ...view, revision });
    });
}
