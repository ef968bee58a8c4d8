/**
 * Where a process's CPU went over time, from one V8 CPU profile (`--cpu-prof`): a row per
 * window of busy milliseconds per second (not idle), then for each `--range A-B` (seconds from
 * the profile's start) the functions with the most self time, per second of the range, side by
 * side — what changed between "before" and "after" in a long run (bench:soak's stall).
 *
 *   npx tsx bench/profile-windows.ts FILE.cpuprofile [--window 30] [--top 25] [--range 60-180 --range 300-420] [--by-controller]
 *
 * `--by-controller` sums each sample under the innermost `jobs/controllers/NAME.ts` frame on its
 * stack (what that controller's code and everything it calls cost), "other" for the rest;
 * `--group REGEX [--outer]` the same under any file the pattern matches (its first capture names
 * the group), the outermost such frame with `--outer` (`--group '/main/(\w+/[\w/-]+)\.ts$' --outer`:
 * which entry point of ours the time went under).
 *
 * Last line: one JSON object with the windows and the ranges' totals.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';

const profileSchema = z.object({
  nodes: z.array(z.object({ id: z.number(), callFrame: z.object({ functionName: z.string(), url: z.string(), lineNumber: z.number() }), children: z.array(z.number()).optional() })),
  startTime: z.number(),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});
export type CpuProfile = z.output<typeof profileSchema>;

/** A sample's time in µs from the profile's start, and the function it was in. */
export interface Sample {
  atUs: number;
  /** What the sample spent: its own time until the next sample. */
  spentUs: number;
  frame: string;
  /** The innermost caller on the stack whose file matches `--group`'s pattern (its file name), else "other". */
  group: string;
}

const IDLE = '(idle)';

export function samplesOf(p: CpuProfile, groupBy = /\/jobs\/controllers\/([\w-]+)\.ts$/, outer = false): Sample[] {
  const names = new Map(p.nodes.map((n) => [n.id, frameName(n.callFrame)]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const groups = new Map<number, string>();
  const groupOf = (id: number): string => {
    const known = groups.get(id);
    if (known !== undefined) return known;
    const m = groupBy.exec(byId.get(id)?.callFrame.url ?? '');
    const up = parent.get(id);
    const above = up === undefined ? 'other' : groupOf(up);
    // Innermost: this frame's group if it matches; outermost: the caller's, if any matched above.
    const g = outer ? (above !== 'other' ? above : m ? (m[1] ?? m[0]) : 'other') : m ? (m[1] ?? m[0]) : above;
    groups.set(id, g);
    return g;
  };
  const out: Sample[] = [];
  let at = 0;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    const spent = p.timeDeltas[i + 1] ?? 0;
    out.push({ atUs: at, spentUs: Math.max(0, spent), frame: names.get(p.samples[i]!) ?? '?', group: groupOf(p.samples[i]!) });
  }
  return out;
}

function frameName(f: { functionName: string; url: string; lineNumber: number }): string {
  if (!f.url) return f.functionName || '(anonymous)';
  const file = f.url.replace(/^.*\/(node_modules\/)/, '$1').replace(/^.*\/main\//, '').replace(/^file:\/\//, '');
  return `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}`;
}

/** Busy ms per second of each window (everything but "(idle)"). */
export function busyByWindow(samples: readonly Sample[], windowS: number): { fromS: number; busyMsPerS: number }[] {
  const busy: number[] = [];
  const last = samples.at(-1)?.atUs ?? 0;
  const count = Math.ceil(last / 1e6 / windowS) || 1;
  for (let i = 0; i < count; i++) busy.push(0);
  for (const s of samples) if (s.frame !== IDLE) busy[Math.min(count - 1, Math.floor(s.atUs / 1e6 / windowS))]! += s.spentUs;
  return busy.map((us, i) => ({ fromS: i * windowS, busyMsPerS: Number((us / 1000 / windowS).toFixed(1)) }));
}

/** Self time per function (or per group) in [fromS, toS), ms per second of the range. */
export function selfTime(samples: readonly Sample[], fromS: number, toS: number, by: 'frame' | 'group' = 'frame'): Map<string, number> {
  const m = new Map<string, number>();
  for (const s of samples) {
    if (s.atUs < fromS * 1e6 || s.atUs >= toS * 1e6 || s.frame === IDLE) continue;
    m.set(s[by], (m.get(s[by]) ?? 0) + s.spentUs);
  }
  const perS = new Map<string, number>();
  for (const [k, us] of m) perS.set(k, us / 1000 / (toS - fromS));
  return perS;
}

function main(): void {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      window: { type: 'string', default: '30' },
      top: { type: 'string', default: '25' },
      range: { type: 'string', multiple: true, default: [] },
      // Time under each controller's file (anything it calls included), instead of self time per function.
      'by-controller': { type: 'boolean', default: false },
      // Or under any file matching this pattern (its first group names it); --outer: the outermost such frame.
      group: { type: 'string' },
      outer: { type: 'boolean', default: false },
    },
  });
  const file = positionals[0];
  if (!file) {
    console.error('usage: npx tsx bench/profile-windows.ts FILE.cpuprofile [--window S] [--top N] [--range A-B]…');
    process.exit(1);
  }
  const samples = samplesOf(profileSchema.parse(JSON.parse(readFileSync(file, 'utf8'))), values.group ? new RegExp(values.group) : undefined, values.outer);
  const windows = busyByWindow(samples, Number(values.window));
  console.log('from (s)  busy ms/s');
  for (const w of windows) console.log(`${String(w.fromS).padStart(8)}  ${w.busyMsPerS.toFixed(1).padStart(9)}`);
  const ranges = values.range.map((r) => {
    const m = /^(\d+)-(\d+)$/.exec(r);
    if (!m || Number(m[1]) >= Number(m[2])) throw new Error(`--range must be A-B, seconds, A < B: "${r}"`);
    return { fromS: Number(m[1]), toS: Number(m[2]) };
  });
  const tables = ranges.map((r) => selfTime(samples, r.fromS, r.toS, values['by-controller'] || values.group ? 'group' : 'frame'));
  const totals = tables.map((t) => [...t.values()].reduce((a, b) => a + b, 0));
  if (ranges.length > 0) {
    const rank = new Map<string, number>();
    for (const t of tables) for (const [k, v] of t) rank.set(k, Math.max(rank.get(k) ?? 0, v));
    const top = [...rank.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
    console.log(`\nself ms/s   ${ranges.map((r) => `${r.fromS}-${r.toS}s`.padStart(10)).join(' ')}   function`);
    console.log(`total       ${totals.map((t) => t.toFixed(1).padStart(10)).join(' ')}`);
    for (const [k] of top) console.log(`            ${tables.map((t) => (t.get(k) ?? 0).toFixed(2).padStart(10)).join(' ')}   ${k}`);
  }
  console.log(JSON.stringify({ windows, ranges: ranges.map((r, i) => ({ ...r, busyMsPerS: Number(totals[i]!.toFixed(1)) })) }));
}

if (import.meta.url === `file://${process.argv[1]}`) main();
