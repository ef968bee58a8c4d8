import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lookupProgram } from '../../agent/runtime-process.js';
import { startFailure, type StartFailureInput } from '../../agent/core/start-failure.js';

const base: StartFailureInput = { runtime: 'process', node: 'n1', replica: 'web-abc', service: 'web', image: 'ccattler/toolbox:1', argv: ['httpd', '-f'], exitCode: 127, detail: undefined };
const diagnose = (over: Partial<StartFailureInput>) => startFailure({ ...base, ...over });

describe('why a command could not start (CCA-E0530)', () => {
  it('a program missing from PATH names the command, node, runtime and fix', () => {
    const d = diagnose({ detail: { spawnError: { errno: 'ENOENT', message: 'spawn httpd ENOENT' }, lookup: { found: false, path: '/usr/bin:/bin' } } });
    expect(d?.code).toBe('CCA-E0530');
    expect(d?.message).toContain('`httpd`');
    expect(d?.message).toContain('node n1');
    expect(d?.message).toContain('process runtime');
    expect(d?.message).toContain('not found on the workload');
    expect(d?.message).toContain('fix: use image ccattler/toolbox:1');
  });

  it('a known program gets its Debian package in the fix', () => {
    const d = diagnose({ argv: ['python3', 'app.py'], detail: { spawnError: { errno: 'ENOENT', message: 'spawn python3 ENOENT' }, lookup: { found: false, path: '/usr/bin' } } });
    expect(d?.message).toContain('apt-get install -y python3');
  });

  it('a file that is not executable, and one whose #! interpreter is missing', () => {
    const notExec = diagnose({ argv: ['./run.sh'], exitCode: 126, detail: { spawnError: { errno: 'EACCES', message: 'spawn ./run.sh EACCES' }, lookup: { found: true, file: '/w/run.sh', executable: false } } });
    expect(notExec?.message).toContain('/w/run.sh is not executable');
    const interp = diagnose({ argv: ['./app'], detail: { spawnError: { errno: 'ENOENT', message: 'spawn ./app ENOENT' }, lookup: { found: true, file: '/w/app', executable: true, interpreter: { path: 'ruby', exists: false } } } });
    expect(interp?.message).toContain('#!ruby, which is not installed');
    expect(interp?.message).toContain('apt-get install -y ruby');
  });

  it('exit 127 and 126 from a shell wrapper name the command the shell could not run (dash, bash, busybox)', () => {
    for (const [tail, name] of [
      ['sh: 1: not-here: not found\n', 'not-here'],
      ['bash: line 1: nope-cmd: command not found\n', 'nope-cmd'],
      ['sh: other-cmd: not found\n', 'other-cmd'],
    ] as const) {
      const d = diagnose({ argv: ['sh', '-c', `exec ${name}`], detail: { stderrTail: `some earlier line\n${tail}` } });
      expect(d?.message, tail).toContain(`cannot start \`${name}\``);
      expect(d?.message).toContain('the shell started by `sh`');
    }
    const denied = diagnose({ argv: ['sh', '-c', './x'], exitCode: 126, detail: { stderrTail: 'sh: 1: ./x: Permission denied\n' } });
    expect(denied?.message).toContain('could not execute `./x`: permission denied');
  });

  it('a program that exits 127 by itself without a shell complaint stays a plain failure', () => {
    expect(diagnose({ argv: ['myapp'], detail: { stderrTail: 'fatal: config missing\n' } })).toBeUndefined();
    expect(diagnose({ exitCode: 1, detail: undefined })).toBeUndefined();
  });

  it("containerd: runc's exec errors, with an image fix", () => {
    const d = diagnose({ runtime: 'containerd', image: 'busybox:1.35', exitCode: undefined, detail: { spawnError: { message: 'OCI runtime exec failed: exec: "nginx": executable file not found in $PATH' } } });
    expect(d?.message).toContain('containerd runtime cannot start `httpd`');
    expect(d?.message).toContain('image busybox:1.35 has no usable');
  });
});

describe('looking a program up as the workload would', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cca-lookup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'plain'), 'data');
  writeFileSync(join(bin, 'ok'), '#!/bin/sh\necho ok\n', { mode: 0o755 });
  writeFileSync(join(bin, 'lost-interp'), '#!/no/such/interpreter -x\n', { mode: 0o755 });
  writeFileSync(join(bin, 'env-interp'), '#!/usr/bin/env no-such-runtime-cca\n', { mode: 0o755 });
  chmodSync(join(bin, 'plain'), 0o644);

  it('finds, or not, on PATH and by relative path', () => {
    expect(lookupProgram('missing-x', `${bin}:/nonexistent`, dir)).toEqual({ found: false, path: `${bin}:/nonexistent` });
    expect(lookupProgram('ok', bin, dir)).toEqual({ found: true, file: join(bin, 'ok'), executable: true, interpreter: { path: '/bin/sh', exists: true } });
    expect(lookupProgram('./bin/ok', '', dir)).toMatchObject({ found: true, file: join(bin, 'ok') });
  });

  it('tells a file that cannot run, and a missing interpreter (direct or through env)', () => {
    // root can read anything, but X_OK still needs an execute bit.
    expect(lookupProgram('plain', bin, dir)).toEqual({ found: true, file: join(bin, 'plain'), executable: false });
    expect(lookupProgram('lost-interp', bin, dir)).toMatchObject({ interpreter: { path: '/no/such/interpreter', exists: false } });
    expect(lookupProgram('env-interp', bin, dir)).toMatchObject({ interpreter: { path: 'no-such-runtime-cca', exists: false } });
  });
});
