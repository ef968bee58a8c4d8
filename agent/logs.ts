import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeDiagnostic } from '../core/diagnostics/index.js';
import { LOG_LIMITS, type LogFrame, type LogRequest } from '../core/model/index.js';
import { allRotated, rotatedOf, timesOf } from './logfile.js';

/**
 * Serving one log request from a replica's output files (agent/logfile.ts): what came before
 * (`tail`, `since`, the rotated file for `previous`), then, with `follow`, what is appended,
 * across rotations. Bounded in bytes and time (LOG_LIMITS, or tighter ones from a test).
 */
export interface ReadLimits {
  maxBytes: number;
  maxFollowMs: number;
  pollMs: number;
}

const defaults: ReadLimits = { maxBytes: LOG_LIMITS.maxBytes, maxFollowMs: LOG_LIMITS.maxFollowMs, pollMs: 200 };

const streamOf = (file: string): 'stdout' | 'stderr' => (basename(file).startsWith('stderr') ? 'stderr' : 'stdout');

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function inodeOf(file: string): number {
  try {
    return statSync(file).ino;
  } catch {
    return -1;
  }
}

function readRange(file: string, start: number, end: number): Buffer {
  if (end <= start) return Buffer.alloc(0);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const buf = Buffer.alloc(end - start);
    const n = readSync(fd, buf, 0, buf.length, start);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * Where in `file` the output written at or after `sinceMs` begins: the offset of the last time
 * mark not after it (the marks are at most a second apart while output flows, so at most a
 * second of earlier output comes along), 0 when every mark is later, the end when there are
 * no marks and the file is older.
 */
export function offsetSince(file: string, sinceMs: number): number {
  let marks: Array<[number, number]> = [];
  try {
    marks = readFileSync(timesOf(file), 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ').map(Number) as [number, number]);
  } catch {
    // No index: the file's modification time says whether anything in it is recent.
    try {
      return statSync(file).mtimeMs >= sinceMs ? 0 : sizeOf(file);
    } catch {
      return 0;
    }
  }
  let offset = 0;
  for (const [at, t] of marks) if (t <= sinceMs) offset = at;
  return offset;
}

/** The last `n` lines of `buf` (a trailing newline ends the last line, it does not start one). */
export function lastLines(buf: Buffer, n: number): Buffer {
  if (n === 0) return Buffer.alloc(0);
  let end = buf.length;
  if (end > 0 && buf[end - 1] === 0x0a) end--;
  let seen = 0;
  for (let i = end - 1; i >= 0; i--) {
    if (buf[i] === 0x0a && ++seen === n) return buf.subarray(i + 1);
  }
  return buf;
}

/**
 * What came before: the rotated files, oldest first, then the current one (or the newest
 * rotated only, for `previous`), cut by since, tail and the byte bound.
 */
function history(file: string, req: LogRequest, maxBytes: number): Buffer {
  const parts = req.previous ? [rotatedOf(file)] : [...allRotated(file).filter((f) => existsSync(f)).reverse(), file];
  const chunks = parts.map((f) => readRange(f, req.sinceMs === undefined ? 0 : offsetSince(f, req.sinceMs), sizeOf(f)));
  let all: Buffer = Buffer.concat(chunks);
  if (req.tail !== undefined) all = lastLines(all, req.tail);
  if (all.length > maxBytes) {
    // Cut to the bound at a line start: a partial first line would read as a whole one.
    const cut = all.subarray(all.length - maxBytes);
    const nl = cut.indexOf(0x0a);
    all = nl >= 0 ? cut.subarray(nl + 1) : cut;
  }
  return all;
}

/** Frames for one request; ends at the end of the output, or (following) at a bound or when `signal` aborts. */
export async function* readLogs(files: string[], req: LogRequest, signal: AbortSignal, limits: Partial<ReadLimits> = {}): AsyncGenerator<LogFrame> {
  const lim = { ...defaults, ...limits };
  let sent = 0;
  const positions = files.map((f) => ({ file: f, pos: sizeOf(f), ino: inodeOf(f), held: Buffer.alloc(0) }));
  for (const p of positions) {
    const h = history(p.file, req, lim.maxBytes - sent);
    sent += h.length;
    if (h.length > 0) yield { stream: streamOf(p.file), text: h.toString('utf8') };
  }
  if (!req.follow || req.previous) return;
  const until = Date.now() + lim.maxFollowMs;
  while (!signal.aborted) {
    if (Date.now() >= until) {
      yield { end: makeDiagnostic('CCA-E0561', { replica: req.replica, what: `${Math.round(lim.maxFollowMs / 1000)} s of following`, limit: `${Math.round(lim.maxFollowMs / 60_000)} min` }) };
      return;
    }
    for (const p of positions) {
      const ino = inodeOf(p.file);
      const size = sizeOf(p.file);
      let fresh: Buffer;
      if (ino !== p.ino || size < p.pos) {
        // Rotated: the rest of the old file is `.1` now (renamed, or copied then truncated).
        fresh = Buffer.concat([readRange(rotatedOf(p.file), p.pos, sizeOf(rotatedOf(p.file))), readRange(p.file, 0, size)]);
        p.ino = ino;
      } else {
        fresh = readRange(p.file, p.pos, size);
      }
      p.pos = size;
      if (fresh.length === 0 && p.held.length === 0) continue;
      if (sent + fresh.length > lim.maxBytes) {
        yield { end: makeDiagnostic('CCA-E0561', { replica: req.replica, what: `${sent} bytes`, limit: `${lim.maxBytes} bytes` }) };
        return;
      }
      sent += fresh.length;
      // Whole lines only, unless a partial one waited a whole poll (a prompt without newline).
      const text = Buffer.concat([p.held, fresh]);
      const nl = text.lastIndexOf(0x0a);
      const out = fresh.length === 0 ? text : text.subarray(0, nl + 1);
      p.held = fresh.length === 0 ? Buffer.alloc(0) : text.subarray(nl + 1);
      if (out.length > 0) yield { stream: streamOf(p.file), text: out.toString('utf8') };
    }
    await sleep(lim.pollMs, undefined, { signal }).catch(() => undefined);
  }
}

/** The files exist (or the runtime made none yet): false only when the replica's directory is gone. */
export function filesPresent(files: string[]): boolean {
  return files.some((f) => existsSync(f) || existsSync(rotatedOf(f)));
}
