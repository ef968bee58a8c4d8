import { randomBytes } from 'node:crypto';

/**
 * Request IDs for one invocation: `c-<time, base36>-<random>-<n>`, or the user's
 * --request-id for the first request and `<id>.<n>` after it. The server accepts
 * [A-Za-z0-9._:-]{1,128} and echoes it; errors print it.
 */
export function requestIds(now: number, given?: string): () => string {
  const base = given ?? `c-${now.toString(36)}-${randomBytes(4).toString('hex')}`;
  let n = 0;
  return () => {
    const i = n++;
    if (given !== undefined) return i === 0 ? given : `${given}.${i}`;
    return `${base}-${i}`;
  };
}
