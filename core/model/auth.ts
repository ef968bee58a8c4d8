import { z } from 'zod';

/**
 * `/auth/tokens/<role>` and `/auth/nodes/<node>`: only a token's SHA-256 is stored. The
 * tokens are 256-bit random strings, so a fast hash is enough: there is nothing to guess.
 */
export const tokenHashSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.int().min(0),
});

export type TokenHash = z.output<typeof tokenHashSchema>;
