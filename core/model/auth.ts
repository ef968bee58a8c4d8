import { z } from 'zod';

/**
 * `/auth/tokens/<id>` and `/auth/nodes/<node>`: only a token's SHA-256 is stored. The
 * tokens are 256-bit random strings, so a fast hash is enough: there is nothing to guess.
 */
export const tokenHashSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.int().min(0),
});

export type TokenHash = z.output<typeof tokenHashSchema>;

/**
 * What a token may do. admin ⊇ deployer ⊇ reader; join only enrolls nodes (admin may too).
 * Node credentials are not tokens: they act for their own node's agent routes only.
 */
export const tokenRoles = ['admin', 'deployer', 'reader', 'join'] as const;
export const tokenRoleSchema = z.enum(tokenRoles);
export type TokenRole = z.output<typeof tokenRoleSchema>;

/**
 * `/auth/tokens/<id>`: a token's hash with its role and limits. The bootstrap tokens of
 * older stores carry no role: their id is their role.
 */
export const apiTokenSchema = tokenHashSchema.extend({
  role: tokenRoleSchema.optional(),
  /** An operator's label, for `cca token list`. */
  name: z.string().max(100).optional(),
  /** Epoch ms after which the token authenticates as nothing. */
  expiresAt: z.int().min(0).optional(),
  /** Enrollments left (join tokens); absent = unlimited. Decremented in the enrollment's transaction. */
  usesLeft: z.int().min(0).optional(),
  /** The uses it was created with, to say "used up (it allowed N)". */
  uses: z.int().min(1).optional(),
  /** Set by `cca token revoke`: kept as a tombstone so a revoked token is refused as revoked, not as unknown. */
  revokedAt: z.int().min(0).optional(),
});

export type ApiToken = z.output<typeof apiTokenSchema>;

/** The role a stored token carries; a bootstrap record without one is named after its role. */
export function roleOfToken(id: string, t: ApiToken): TokenRole | undefined {
  if (t.role) return t.role;
  const r = tokenRoleSchema.safeParse(id);
  return r.success ? r.data : undefined;
}

/** Why a stored token no longer authenticates, or undefined while it does. */
export type TokenUnusable = 'revoked' | 'expired' | 'used up';

export function tokenUnusable(t: ApiToken, now: number): TokenUnusable | undefined {
  if (t.revokedAt !== undefined) return 'revoked';
  if (t.expiresAt !== undefined && now >= t.expiresAt) return 'expired';
  if (t.usesLeft !== undefined && t.usesLeft <= 0) return 'used up';
  return undefined;
}

/** What a route needs: a token role, or `anyone` (health, the console's files). */
export type RouteRole = 'anyone' | 'reader' | 'deployer' | 'admin' | 'join';

const grants: Record<TokenRole, readonly RouteRole[]> = {
  admin: ['anyone', 'reader', 'deployer', 'admin', 'join'],
  deployer: ['anyone', 'reader', 'deployer'],
  reader: ['anyone', 'reader'],
  join: ['anyone', 'join'],
};

/** Whether a token of role `have` may use a route that needs `need`. */
export function roleSatisfies(have: TokenRole, need: RouteRole): boolean {
  return grants[have].includes(need);
}
