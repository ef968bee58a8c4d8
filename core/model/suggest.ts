/** Edit distance with a cap: work stays O(a·b) on short names and stops early past `max`. */
export function editDistance(a: string, b: string, max = 3): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > max) return max + 1;
    prev = cur;
  }
  return prev[b.length]!;
}

/** The nearest candidate for a "did you mean" hint, or undefined when nothing is close. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  if (word.length > 64) return undefined;
  const max = word.length <= 3 ? 1 : word.length <= 6 ? 2 : 3;
  let best: string | undefined;
  let bestD = max + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase(), max);
    if (d < bestD || (d === bestD && best !== undefined && c < best)) {
      best = c;
      bestD = d;
    }
  }
  // A prefix ("rep" for "replicas") is also a fine guess.
  if (best === undefined && word.length >= 3) best = candidates.find((c) => c.startsWith(word));
  return best;
}
