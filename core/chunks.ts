/** `items` in consecutive pieces of at most `size` (the last may be shorter): reads and writes within a store's per-request bound. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
