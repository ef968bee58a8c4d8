import * as fs from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DISK, DiskWatch, diskFullReason } from '../../agent/core/disk.js';
import { fenceText, readFenceFile } from '../../agent/fence-file.js';
import { enforceLogBudget, overBudget, type LogFileInfo } from '../../agent/log-budget.js';
import { RotatingLog, rotatedOf } from '../../agent/logfile.js';
import { readLogs } from '../../agent/logs.js';
import { StateDir, type StateIo } from '../../agent/state.js';
import type { LogFrame, LogRequest } from '../../core/model/index.js';
import { tempDir } from './support.js';

const MiB = 1024 * 1024;
const noRoom = (file: string) => ({ file, reason: 'ENOSPC: no space left on device, write' });

describe('the disk condition (agent/core/disk.ts): pure', () => {
  it('full on a failed write for want of space, or below the minimum free; clears only at twice the minimum', () => {
    expect(diskFullReason({ dir: '/s', noSpace: [], freeBytes: 100 * MiB }, 64 * MiB, false)).toBeUndefined();
    expect(diskFullReason({ dir: '/s', noSpace: [noRoom('/s/desired.json')], freeBytes: 100 * MiB }, 64 * MiB, false)).toMatch(/desired\.json failed: ENOSPC/);
    expect(diskFullReason({ dir: '/s', noSpace: [], freeBytes: 10 * MiB }, 64 * MiB, false)).toMatch(/10\.0 MiB free, below --disk-min-free 64\.0 MiB/);
    // Hysteresis: once full, 100 MiB (< 2 × 64) is not enough to clear.
    expect(diskFullReason({ dir: '/s', noSpace: [], freeBytes: 100 * MiB }, 64 * MiB, true)).toMatch(/below twice/);
    expect(diskFullReason({ dir: '/s', noSpace: [], freeBytes: 128 * MiB }, 64 * MiB, true)).toBeUndefined();
    // 0 turns the free-space rule off: only failed writes count. Unknown free space likewise.
    expect(diskFullReason({ dir: '/s', noSpace: [], freeBytes: 0 }, 0, false)).toBeUndefined();
    expect(diskFullReason({ dir: '/s', noSpace: [] }, 64 * MiB, false)).toBeUndefined();
  });

  it('DiskWatch says when the condition begins and ends, once each, with CCA-E0570', () => {
    const w = new DiskWatch('n1', MiB);
    expect(w.observe({ dir: '/s', noSpace: [], freeBytes: 10 * MiB }, 1)).toBe(false);
    expect(w.observe({ dir: '/s', noSpace: [noRoom('/s/lease.json')] }, 2)).toBe(true);
    expect(w.condition).toMatchObject({ kind: 'disk-full', code: 'CCA-E0570', since: 2 });
    expect(w.condition?.message).toMatch(/node n1 cannot write to its state directory \/s: writing \/s\/lease\.json failed/);
    expect(w.observe({ dir: '/s', noSpace: [noRoom('/s/lease.json'), noRoom('/s/desired.json')] }, 3)).toBe(false);
    expect(w.condition?.since).toBe(2);
    expect(w.observe({ dir: '/s', noSpace: [], freeBytes: 1.5 * MiB }, 4)).toBe(false);
    expect(w.observe({ dir: '/s', noSpace: [], freeBytes: 2 * MiB }, 5)).toBe(true);
    expect(w.condition).toBeUndefined();
    expect(DISK.defaultMinFreeBytes).toBe(64 * MiB);
  });
});

describe('the node cap on workload output (agent/log-budget.ts)', () => {
  const f = (path: string, size: number, mtimeMs: number, rotated: boolean): LogFileInfo => ({ path, size, mtimeMs, rotated });

  it('deletes the oldest rotated files until the total fits, never a current file', () => {
    const files = [f('a/stdout.log', 50, 9, false), f('a/stdout.log.1', 100, 5, true), f('a/stdout.log.2', 100, 1, true), f('b/stderr.log.1', 100, 3, true), f('b/stderr.log', 80, 9, false)];
    expect(overBudget(files, 1_000)).toEqual([]);
    expect(overBudget(files, 330)).toEqual(['a/stdout.log.2']);
    expect(overBudget(files, 200)).toEqual(['a/stdout.log.2', 'b/stderr.log.1', 'a/stdout.log.1']);
    // The current files alone are over: every rotated file goes, the current ones stay.
    expect(overBudget(files, 10)).toEqual(['a/stdout.log.2', 'b/stderr.log.1', 'a/stdout.log.1']);
  });

  it('on real files: the replicas directory is trimmed, the time indexes go with their files', () => {
    const t = tempDir('log-budget');
    try {
      const dir = join(t.dir, 'r-1');
      fs.mkdirSync(dir);
      fs.writeFileSync(join(dir, 'stdout.log'), 'x'.repeat(100));
      fs.writeFileSync(join(dir, 'stdout.log.1'), 'x'.repeat(100));
      fs.writeFileSync(join(dir, 'stdout.log.1.times'), '0 1\n');
      fs.writeFileSync(join(dir, 'supervisor.json'), 'x'.repeat(1000));
      fs.utimesSync(join(dir, 'stdout.log.1'), new Date(1_000), new Date(1_000));
      expect(enforceLogBudget(t.dir, 150)).toEqual([join(dir, 'stdout.log.1')]);
      expect(fs.readdirSync(dir).sort()).toEqual(['stdout.log', 'supervisor.json']);
    } finally {
      t.cleanup();
    }
  });
});

describe('N rotated files per stream (agent/logfile.ts) and reading across them (agent/logs.ts)', () => {
  const t = tempDir('rotate-n');
  afterAll(t.cleanup);

  it('keeps .1 … .keep, newest first; the history reads them oldest first, then the current file', async () => {
    const file = join(t.dir, 'stdout.log');
    let now = 1_000;
    const log = new RotatingLog(file, 40, () => now, 3);
    for (let i = 0; i < 40; i++) {
      log.write(Buffer.from(`line ${String(i).padStart(3, '0')}\n`));
      now += 100;
    }
    for (const n of [1, 2, 3]) expect(fs.statSync(rotatedOf(file, n)).size).toBeLessThanOrEqual(40);
    expect(fs.existsSync(rotatedOf(file, 4))).toBe(false);
    // 4 files × 4 lines of 9 bytes (40 bytes hold 4): the last 16 lines, in order.
    const req: LogRequest = { id: '0'.repeat(32), replica: 'r-1', follow: false, previous: false };
    const frames: LogFrame[] = [];
    for await (const fr of readLogs([file], req, new AbortController().signal)) frames.push(fr);
    const lines = frames.map((fr) => ('text' in fr ? fr.text : '')).join('').trimEnd().split('\n');
    expect(lines).toEqual(Array.from({ length: 16 }, (_, i) => `line ${String(24 + i).padStart(3, '0')}`));
    // --previous: the newest rotated file only.
    const prev: LogFrame[] = [];
    for await (const fr of readLogs([file], { ...req, previous: true }, new AbortController().signal)) prev.push(fr);
    expect(prev.map((fr) => ('text' in fr ? fr.text : '')).join('')).toBe(fs.readFileSync(rotatedOf(file, 1), 'utf8'));
    // Fewer kept from now on: the ones past it go at the next rotation.
    const fewer = new RotatingLog(file, 40, () => now, 1);
    for (let i = 0; i < 5; i++) fewer.write(Buffer.from('again 00\n'));
    expect(fs.existsSync(rotatedOf(file, 2))).toBe(false);
    expect(fs.existsSync(rotatedOf(file, 3))).toBe(false);
  });
});

describe('the fence deadline written in place (agent/fence-file.ts, agent/state.ts)', () => {
  it('fixed width; a torn or empty read is no deadline (not 0); an older bare number still reads', () => {
    const t = tempDir('fence-file');
    try {
      const file = join(t.dir, 'fence-at');
      expect(fenceText(1_733_000_000_000)).toBe('0001733000000000\n');
      expect(fenceText(0)).toHaveLength(fenceText(9_999_999_999_999).length);
      fs.writeFileSync(file, '');
      expect(readFenceFile(file)).toBeUndefined();
      fs.writeFileSync(file, '1733000000000');
      expect(readFenceFile(file)).toBe(1_733_000_000_000);
      expect(readFenceFile(join(t.dir, 'missing'))).toBeUndefined();
    } finally {
      t.cleanup();
    }
  });

  it('the deadline moves in the same inode, and keeps moving when every new file fails for want of space', () => {
    const t = tempDir('fence-inplace');
    try {
      let full = false;
      const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      const io: StateIo = {
        ...fs,
        // A full disk: no new file can be written; bytes a file already has can be overwritten.
        writeFileSync: ((...args: Parameters<typeof fs.writeFileSync>) => {
          if (full) throw enospc();
          return fs.writeFileSync(...args);
        }) as typeof fs.writeFileSync,
        statfsSync: ((...args: Parameters<typeof fs.statfsSync>) => (full ? { ...fs.statfsSync(...args), bavail: 0 } : fs.statfsSync(...args))) as typeof fs.statfsSync,
      };
      const state = new StateDir(t.dir, io);
      const reports: string[] = [];
      state.onReport = (line) => void reports.push(line);
      expect(state.saveFenceAt(1_000)).toBe(true);
      const ino = fs.statSync(join(t.dir, 'fence-at')).ino;
      full = true;
      expect(state.saveFenceAt(2_733_000_000_000)).toBe(true);
      expect(state.saveRunUntil(2_733_000_005_000)).toBe(true);
      expect(fs.statSync(join(t.dir, 'fence-at')).ino).toBe(ino);
      expect(fs.readFileSync(join(t.dir, 'fence-at'), 'utf8')).toBe('0002733000005000\n');
      expect(readFenceFile(join(t.dir, 'fence-at'))).toBe(2_733_000_005_000);
      expect(state.fenceAt()).toBe(2_733_000_000_000);
      // The other state files do need room: failed, reported, and the disk says so.
      expect(state.saveDesired(3, [])).toBe(false);
      const h = state.health();
      expect(h.noSpace.map((n) => n.file)).toEqual([join(t.dir, 'desired.json')]);
      expect(h.freeBytes).toBe(0);
      // Room again: health() writes the failed file (its latest content) and the failure is gone.
      full = false;
      expect(state.health().noSpace).toEqual([]);
      expect(JSON.parse(fs.readFileSync(join(t.dir, 'desired.json'), 'utf8'))).toMatchObject({ revision: 3 });
      expect(reports.at(-1)).toMatch(/desired\.json written again/);
    } finally {
      t.cleanup();
    }
  });

  it('an older agent\'s shorter file is overwritten to the fixed width; a failure that is not for space is no disk-full', () => {
    const t = tempDir('fence-old');
    try {
      fs.writeFileSync(join(t.dir, 'fence-at'), '17330000');
      const io: StateIo = {
        ...fs,
        writeFileSync: (() => {
          throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
        }) as typeof fs.writeFileSync,
      };
      const state = new StateDir(t.dir, io);
      state.onReport = () => undefined;
      expect(state.saveRunUntil(1_733_000_000_000)).toBe(true);
      expect(fs.readFileSync(join(t.dir, 'fence-at'), 'utf8')).toBe(fenceText(1_733_000_000_000));
      expect(state.saveLease({ lease: 1, tenure: 2, ttl: 10 })).toBe(false);
      expect(state.health().noSpace).toEqual([]);
    } finally {
      t.cleanup();
    }
  });
});
