import { closeSync, constants, fchmodSync, lstatSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { dnsLabelProblem, FILE_MODE_MAX, showPath, specPathProblem, type SpecPathKind } from '../core/model/index.js';
import type { ServiceSpec } from '../core/model/index.js';
import { Refusal } from './core/errors.js';

/**
 * The agent does not trust the model alone. An older server, a direct store write or a bug
 * can hand it an assignment the schema would refuse, and the names and paths in it become
 * host paths (`<state>/replicas/<replica>/files/<path>`, `<state>/volumes/<service>/<volume>`)
 * and mount arguments. So before it writes anything the agent asks the model's own questions
 * again (the same functions: one policy, not a copy), and then, whatever the answers, it
 * writes only strictly under the replica's `files/` directory and never through a symbolic
 * link: a workload of the process runtime can plant links in its own `files/` before a
 * restart of the same replica (a fence lifting re-starts it in place).
 *
 * A refusal becomes CCA-E0531 on the replica (agent/agent.ts); nothing is written outside.
 */
export { Refusal };

/** Replica ids are `<service>-<8 chars>` (jobs/ids.ts): a label, a little longer than a service name. */
const REPLICA_ID_MAX = 128;

function label(what: string, name: unknown, max?: number): void {
  const problem = typeof name === 'string' ? dnsLabelProblem(name, max) : 'it is not text';
  if (problem !== undefined) throw new Refusal(`the ${what} name ${JSON.stringify(name)} is not valid: ${problem}`);
}

function path(kind: SpecPathKind, p: unknown): void {
  if (typeof p !== 'string') throw new Refusal(`a ${kind} path is not text`);
  const problem = specPathProblem(p, kind);
  if (problem) throw new Refusal(problem.reason);
}

/** Every name and path of an assignment that reaches the host, checked as the schema does. */
export function checkAssignment(a: { replica: string; service: string; spec: Pick<ServiceSpec, 'name' | 'workdir' | 'configs' | 'secrets' | 'volumes' | 'init'> }): void {
  label('replica', a.replica, REPLICA_ID_MAX);
  label('service', a.service);
  if (a.spec.name !== a.service) throw new Refusal(`the spec is named ${JSON.stringify(a.spec.name)} but assigned as service ${JSON.stringify(a.service)}`);
  if (a.spec.workdir !== undefined) path('workdir', a.spec.workdir);
  for (const c of a.spec.configs) (label('config', c.name), path('config', c.path));
  for (const s of a.spec.secrets) {
    label('secret', s.name);
    if (s.path !== undefined) path('secret', s.path);
  }
  for (const v of a.spec.volumes) (label('volume', v.name), path('volume', v.mountPath));
  for (const i of a.spec.init) label('init step', i.name);
}

/** Volume directories are `<service>/<volume>`: both must be labels, or a name could climb out. */
export function checkVolumeNames(service: string, volume: string): void {
  label('service', service);
  label('volume', volume);
}

export function volumeNamesOk(service: string, volume: string): boolean {
  return dnsLabelProblem(service) === undefined && dnsLabelProblem(volume) === undefined;
}

/**
 * `specPath` as a host path strictly below `root` (the path resolved, then its relation to
 * the root checked), independent of any earlier check. `root` itself only when allowed.
 */
export function confinedPath(root: string, specPath: string, opts: { allowRoot?: boolean } = {}): string {
  // A NUL would make every fs call throw a TypeError (a start failure, not a refusal).
  if (specPath.includes('\0')) throw new Refusal(`the path ${showPath(specPath)} contains a NUL`);
  const host = resolve(root, `.${sep}${specPath}`);
  const rel = relative(root, host);
  const outside = rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
  if (outside || (rel === '' && !opts.allowRoot)) throw new Refusal(`the path ${showPath(specPath)} resolves to ${rel === '' ? 'the replica\'s own directory' : 'a place outside the replica\'s directory'}`);
  return host;
}

function code(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}

/** `root` must be a real directory (not a link to one): everything below is judged from it. */
export function checkRoot(root: string): void {
  const st = lstatSync(root);
  if (!st.isDirectory()) throw new Refusal(`${root} is ${st.isSymbolicLink() ? 'a symbolic link; the agent does not write through links' : 'not a directory'}`);
}

/**
 * Make each directory from `root` down to `dir` (both included), one component at a time,
 * refusing a symbolic link or a non-directory on the way. Node has no openat(2), so this
 * checks each component with lstat; a workload racing the agent between the check and the
 * use is not stopped by it (the workload is not running while its replica starts).
 */
export function ensureDirs(root: string, dir: string, mode = 0o700): void {
  checkRoot(root);
  const rel = relative(root, dir);
  if (rel === '') return;
  let cur = root;
  for (const part of rel.split(sep)) {
    cur = join(cur, part);
    let st;
    try {
      st = lstatSync(cur);
    } catch (e) {
      if (code(e) !== 'ENOENT') throw e;
      mkdirSync(cur, { mode });
      continue;
    }
    if (st.isSymbolicLink()) throw new Refusal(`${relative(root, cur)} in the replica's files is a symbolic link; the agent does not write through links`);
    if (!st.isDirectory()) throw new Refusal(`${relative(root, cur)} in the replica's files is not a directory`);
  }
}

/**
 * Write `content` at `specPath` below `root` as a fresh file: no link followed (lstat for
 * its directories and for the file, then O_CREAT|O_EXCL, which never follows one), an old
 * regular file there unlinked first (so a hard link planted there is cut, not written
 * through), the mode masked to permission bits (never setuid, setgid or sticky, whatever
 * the spec says).
 */
export function writeConfined(root: string, specPath: string, content: string, mode: number): string {
  const host = confinedPath(root, specPath);
  ensureDirs(root, dirname(host));
  const safeMode = mode & FILE_MODE_MAX;
  let st;
  try {
    st = lstatSync(host);
  } catch (e) {
    if (code(e) !== 'ENOENT') throw e;
  }
  if (st?.isSymbolicLink()) throw new Refusal(`${showPath(specPath)} in the replica's files is a symbolic link; the agent does not write through links`);
  if (st && !st.isFile()) throw new Refusal(`${showPath(specPath)} in the replica's files is not a regular file`);
  if (st) unlinkSync(host);
  let fd: number;
  try {
    fd = openSync(host, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, safeMode);
  } catch (e) {
    // Something appeared between the unlink and the open: not ours to write.
    if (code(e) === 'EEXIST' || code(e) === 'ELOOP') throw new Refusal(`${showPath(specPath)} in the replica's files was replaced while the agent wrote it`);
    throw e;
  }
  try {
    const buf = Buffer.from(content, 'utf8');
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
    // The umask may have cleared bits the spec asked for; set exactly the masked mode.
    fchmodSync(fd, safeMode);
  } finally {
    closeSync(fd);
  }
  return host;
}
