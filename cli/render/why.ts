import { decodeFact, parseKey } from '../../core/keys.js';
import { replicaReason } from '../../core/model/replica-outcome.js';
import type { WhyAnswer } from '../api.js';
import { paint } from './color.js';

export type { WhyAnswer };
type ChainLink = WhyAnswer['chain'][number];

const iso = (ms: number) => new Date(ms).toISOString();
const EVIDENCE_WIDTH = 100;

/**
 * Evidence in one line: a JSON object's scalar fields as `key=value` (what a reader scans
 * for), else the text; clipped unless `full` (--verbose).
 */
export function evidenceText(value: string, full: boolean): string {
  if (value === '') return '(absent when read)';
  let text = value;
  try {
    const v: unknown = JSON.parse(value);
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const scalars = Object.entries(v).filter(([, x]) => x === null || ['string', 'number', 'boolean'].includes(typeof x));
      if (scalars.length > 0 && !full) text = scalars.map(([k, x]) => `${k}=${typeof x === 'string' ? x : JSON.stringify(x)}`).join(' ');
    }
  } catch {
    // Not JSON: shown as it is.
  }
  return full ? text : clip(text, EVIDENCE_WIDTH);
}

/**
 * A replica record as one-line evidence: its outcome is typed (objects the summary skips),
 * so the sentence rendered from those fields leads the line as `reason=`. Other values,
 * and records with nothing to say, are unchanged.
 */
export function shownValue(key: string, value: string): string {
  if (value === '' || parseKey(key)?.kind !== 'replica') return value;
  try {
    const reason = replicaReason(decodeFact('replica', key, value));
    if (reason === '') return value;
    const { reason: _stored, ...rest } = JSON.parse(value) as Record<string, unknown>;
    return JSON.stringify({ reason, ...rest });
  } catch {
    return value;
  }
}

function clip(s: string, width: number): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length <= width ? one : `${one.slice(0, width - 1)}…`;
}

/**
 * A pending decision's shortfall ("needs 1 cpu and 64Mi memory: 2 nodes have < 1 cpu free;
 * 1 node excluded by require zone in ["a"]") as one line per constraint.
 */
export function shortfallLines(reason: string): string[] | undefined {
  const m = /^(needs [^:]+):\s(.+)$/.exec(reason);
  if (!m) return undefined;
  return [`${m[1]}; no node fits:`, ...m[2]!.split('; ').map((p) => `  - ${p}`)];
}

function linkLines(link: ChainLink, depth: number, color: boolean, full: boolean, cited: Cited): string[] {
  const d = link.decision;
  const pad = '   '.repeat(depth);
  const head = `${pad}${depth === 0 ? '' : '└─ '}${paint(color, 'bold', `${d.kind} ${d.subject} ${d.action}`)}  ${paint(color, 'dim', `by ${d.controller} at ${iso(d.at)}`)}`;
  const lines = [head];
  const inner = depth === 0 ? '   ' : `${pad}   `;
  lines.push(`${inner}${paint(color, 'dim', `decision ${link.key}`)}`);
  if (d.action === 'pending' && d.reasons.length > 0) {
    lines.push(`${inner}why not:`);
    const [first, ...rest] = d.reasons;
    for (const l of shortfallLines(first!) ?? [first!]) lines.push(`${inner}  ${paint(color, 'yellow', l)}`);
    for (const r of rest) lines.push(`${inner}  ${r}`);
  } else if (d.reasons.length > 0) {
    lines.push(`${inner}because:`);
    for (const r of d.reasons) lines.push(`${inner}  ${r}`);
  }
  if (d.evidence.length > 0) {
    lines.push(`${inner}evidence:`);
    for (const e of d.evidence) {
      const shown = e.hash === undefined ? evidenceText(full ? e.value : shownValue(e.key, e.value), full) : citedLine(e, cited, full);
      lines.push(`${inner}  ${e.key} @${e.modRevision}  ${paint(color, 'dim', shown)}`);
    }
  }
  return lines;
}

type Evidence = ChainLink['decision']['evidence'][number];
type Cited = WhyAnswer['cited'];

/**
 * Evidence cited by hash (a spec, a large value): what the server read at that revision
 * while the store retains it, else plainly that it was compacted.
 */
export function citedLine(e: Evidence, cited: Cited, full: boolean): string {
  const c = cited.find((x) => x.key === e.key && x.modRevision === e.modRevision);
  const size = `${e.bytes ?? 0} bytes, ${e.hash ?? ''}`;
  if (c?.state === 'retained' && c.value !== undefined) return `(cited, retained) ${evidenceText(c.value, full)}`;
  if (c?.state === 'compacted') return `(cited: ${size}; revision ${e.modRevision} was compacted, its value is no longer kept)`;
  if (c?.state === 'mismatch') return `(cited: ${size}; the value read at revision ${e.modRevision} does not match the citation)`;
  return `(cited: ${size})`;
}

/**
 * The decision chain as an indented tree, newest first, each step caused by the one
 * below it, ending at the terminal fact or saying where and why it was truncated.
 */
export function renderWhy(a: WhyAnswer, color: boolean, full = false): string {
  const status = a.complete ? paint(color, 'green', 'complete') : paint(color, 'red', 'truncated');
  const lines = [`why ${a.kind} ${a.name}: ${status} (${a.chain.length} decision${a.chain.length === 1 ? '' : 's'})`, ''];
  a.chain.forEach((link, i) => lines.push(...linkLines(link, i, color, full, a.cited)));
  const pad = '   '.repeat(a.chain.length);
  if (a.terminal) {
    const now = a.terminal.current === undefined ? 'since deleted' : 'still present';
    lines.push(`${pad}└─ ${paint(color, 'cyan', `${a.terminal.fact} at revision ${a.terminal.modRevision}`)} (terminal; ${now})`);
  } else {
    lines.push(`${pad}└─ ${paint(color, 'red', `truncated: ${a.truncated ?? 'no terminal reached'}`)}`);
  }
  if (a.repeats.length > 0) {
    lines.push('', 'repeated outcomes (counted, never a cause):');
    for (const r of a.repeats) lines.push(`  ${r.controller}: ${r.repeat.count}× from ${iso(r.repeat.first)} to ${iso(r.repeat.last)} (${r.repeat.decision})`);
  }
  const older = a.history.filter((h) => !a.chain.some((c) => c.key === h.key));
  if (older.length > 0) {
    lines.push('', 'other recent decisions about it:');
    for (const h of older) lines.push(`  ${iso(h.decision.at)}  ${h.decision.controller}: ${h.decision.action}`);
  }
  return lines.join('\n');
}
