import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { usedBytes, volumeEnvName, VolumeDir } from '../../agent/volumes.js';
import { tempDir } from './support.js';

const dirs: { cleanup(): void }[] = [];
afterEach(() => dirs.splice(0).forEach((d) => d.cleanup()));

describe('VolumeDir: a volume is a directory per service and volume, its size recorded', () => {
  test('ensure is idempotent, keeps the data, records a new size; mounts follow the spec; remove deletes', () => {
    const t = tempDir('voldir');
    dirs.push(t);
    const v = new VolumeDir(t.dir);
    const path = v.ensure('db', 'data', 1024);
    expect(path).toBe(join(t.dir, 'volumes', 'db', 'data', 'data'));
    writeFileSync(join(path, 'f'), 'hello');
    expect(v.ensure('db', 'data', 2048)).toBe(path);
    expect(readFileSync(join(path, 'f'), 'utf8')).toBe('hello');
    expect(JSON.parse(readFileSync(join(t.dir, 'volumes', 'db', 'data', 'volume.json'), 'utf8')).sizeBytes).toBe(2048);
    expect(v.list()).toEqual([{ service: 'db', volume: 'data', path, sizeBytes: 2048, usedBytes: 5 }]);
    const mounts = v.mountsFor({ name: 'db', volumes: [{ name: 'data', sizeBytes: 2048, mountPath: '/var/lib/db', readOnly: true, keepForMs: 0 }, { name: 'logs', sizeBytes: 10, mountPath: '/logs', readOnly: false, keepForMs: 0 }] });
    expect(mounts).toEqual([
      { name: 'data', hostPath: path, path: '/var/lib/db', readOnly: true },
      { name: 'logs', hostPath: join(t.dir, 'volumes', 'db', 'logs', 'data'), path: '/logs', readOnly: false },
    ]);
    v.remove('db', 'data');
    expect(existsSync(path)).toBe(false);
    expect(v.list().map((x) => x.volume)).toEqual(['logs']);
  });

  test('a volume that cannot be created is CCA-E0520', () => {
    const t = tempDir('voldir-bad');
    dirs.push(t);
    writeFileSync(join(t.dir, 'volumes'), 'a file where the directory should be');
    expect(() => new VolumeDir(t.dir).ensure('db', 'data', 1)).toThrow(/CCA-E0520/);
  });

  test('usedBytes counts regular files (hidden ones too), not what symlinks point at', () => {
    const t = tempDir('voldir-used');
    dirs.push(t);
    mkdirSync(join(t.dir, 'a', '.b'), { recursive: true });
    writeFileSync(join(t.dir, 'a', 'x'), '123');
    writeFileSync(join(t.dir, 'a', '.b', 'y'), '4567');
    const outside = tempDir('voldir-outside');
    dirs.push(outside);
    writeFileSync(join(outside.dir, 'big'), 'x'.repeat(1000));
    symlinkSync(outside.dir, join(t.dir, 'a', 'link'));
    expect(usedBytes(t.dir)).toBe(7);
  });

  test('the process runtime names a volume CCA_VOLUME_<NAME>', () => {
    expect(volumeEnvName('data')).toBe('CCA_VOLUME_DATA');
    expect(volumeEnvName('pg-wal')).toBe('CCA_VOLUME_PG_WAL');
  });
});
