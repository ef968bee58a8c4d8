/**
 * Path rules for the paths a spec puts inside a replica: its working directory, config and
 * secret files, and volume mounts. These strings reach the host: the agent writes files at
 * `<replica>/files/<path>`, the process runtime links volumes there, and the containerd
 * runtime splices them into `ctr run --mount type=bind,src=…,dst=…` (a comma-separated list
 * in which the last `src=` wins). So a path must name exactly one place below the replica's
 * root, spelled one way, with no character those syntaxes read as structure.
 *
 * Pure and shared: the schema (core/model/service.ts) refuses with located diagnostics, and
 * the agent (agent/confine.ts) asks the same questions again of whatever it is handed.
 */
import type { Params } from '../diagnostics/error.js';

export const PATH_MAX = 4096;
export const PATH_COMPONENT_MAX = 255;

/** What holds the path, as a message names it. */
export type SpecPathKind = 'workdir' | 'config' | 'secret' | 'volume';

const WHAT: Record<SpecPathKind, string> = {
  workdir: 'workdir',
  config: 'config path',
  secret: 'secret path',
  volume: 'volume mount',
};

/**
 * Places the runtime provides in every container (or uses itself): a file or volume there
 * would hide them or be hidden (`/proc`, `/sys`, `/dev`), or would replace the whole root
 * (`/`). `/.cca-` is the agent's own prefix (tini is mounted at `/.cca-tini`).
 */
export const RESERVED_PATHS = ['/proc', '/sys', '/dev'] as const;
export const AGENT_PREFIX = '/.cca-';

/**
 * Characters with a meaning in the mount syntaxes the runtimes use: `ctr --mount` is a CSV
 * record of `key=value` fields (`,` separates, `"` quotes, `=` splits), `:` separates mount
 * options and is the `src:dst` separator of `-v`-style syntaxes. Whitespace is refused too:
 * it has no use in a container path, and a trailing space makes two paths look equal.
 */
const MOUNT_SYNTAX: Record<string, string> = {
  ',': 'separates fields in the runtime\'s mount syntax (a path could add its own `src=`)',
  '=': 'separates a key from its value in the runtime\'s mount syntax',
  '"': 'quotes fields in the runtime\'s mount syntax',
  ':': 'separates mount options (and source from destination in `-v` syntax)',
};

export interface PathProblem {
  code: 'CCA-E0324' | 'CCA-E0325' | 'CCA-E0326';
  /** The reason in a few words, for the agent's own refusal (CCA-E0531). */
  reason: string;
  params: Params;
}

/** A path as a message shows it: quoted, escapes visible, long ones cut. */
export function showPath(path: string): string {
  return JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}…` : path);
}

/** Control characters: C0 (NUL among them), DEL and C1. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `path` is not a clean absolute path (one spelling of one place), or undefined. */
export function cleanPathProblem(path: string): string | undefined {
  if (path.length === 0) return 'it is empty';
  if (path.length > PATH_MAX) return `it is ${path.length} characters long; the limit is ${PATH_MAX}`;
  const control = CONTROL.exec(path);
  if (control) return `it contains the control character ${JSON.stringify(control[0])}`;
  if (!path.startsWith('/')) return 'it must start with /';
  if (path === '/') return undefined;
  if (path.endsWith('/')) return 'it ends with /';
  if (path.includes('//')) return 'it has an empty component (//)';
  for (const part of path.slice(1).split('/')) {
    if (part === '.' || part === '..') return `it has a \`${part}\` component`;
    if (part.length > PATH_COMPONENT_MAX) return `a component is ${part.length} characters long; the limit is ${PATH_COMPONENT_MAX}`;
  }
  return undefined;
}

/** The first character of `path` a mount syntax would read as structure, and why. */
export function mountSyntaxProblem(path: string): { char: string; why: string } | undefined {
  for (const ch of path) {
    const why = MOUNT_SYNTAX[ch];
    if (why !== undefined) return { char: ch, why };
    if (/\s/u.test(ch)) return { char: ch, why: 'is whitespace: a container path has no use for it, and it makes two paths look alike' };
  }
  return undefined;
}

/** The reserved place `path` would cover, or undefined. */
export function reservedPathProblem(path: string): string | undefined {
  if (path === '/') return 'the whole root file system';
  if (path.startsWith(AGENT_PREFIX)) return `${AGENT_PREFIX}*, the agent's own files (tini at /.cca-tini)`;
  const hit = RESERVED_PATHS.find((r) => path === r || path.startsWith(`${r}/`));
  return hit === undefined ? undefined : hit;
}

/**
 * Everything wrong with a spec path of this kind, first problem first. A workdir is only
 * required to be clean (the runtime passes it as an argument of its own and writes nothing
 * there but a directory); files and mounts must also avoid mount syntax and reserved places.
 */
export function specPathProblem(path: string, kind: SpecPathKind): PathProblem | undefined {
  const what = WHAT[kind];
  const shown = showPath(path);
  const unclean = cleanPathProblem(path);
  // Mount syntax first (`/data,src=/` is about its comma, not its trailing slash), but a
  // control character (a newline is also whitespace) is reported as one.
  const syntax = kind === 'workdir' || CONTROL.test(path) ? undefined : mountSyntaxProblem(path);
  if (syntax) {
    const char = JSON.stringify(syntax.char);
    return { code: 'CCA-E0325', reason: `${what} ${shown} contains ${char}, which ${syntax.why}`, params: { what, path: shown, char, why: syntax.why } };
  }
  if (unclean !== undefined) return { code: 'CCA-E0324', reason: `${what} ${shown} ${unclean}`, params: { what, path: shown, reason: unclean } };
  if (kind === 'workdir') return undefined;
  const reserved = reservedPathProblem(path);
  if (reserved !== undefined) return { code: 'CCA-E0326', reason: `${what} ${shown} would cover ${reserved}`, params: { what, path: shown, reserved } };
  return undefined;
}

/** File modes a spec may ask for: permission bits only, no setuid, setgid or sticky. */
export const FILE_MODE_MAX = 0o777;

/** Why `mode` (at least 0: the schema checks that) is not a plain permission mode, or undefined. */
export function fileModeProblem(mode: number): { bits: string; suggested: string } | undefined {
  if (mode <= FILE_MODE_MAX) return undefined;
  const named = [
    [0o4000, 'setuid'],
    [0o2000, 'setgid'],
    [0o1000, 'sticky'],
  ] as const;
  const bits: string[] = named.filter(([bit]) => (mode & bit) !== 0).map(([, name]) => name);
  if (mode > 0o7777) bits.push('bits that are not file mode bits');
  const suggested = `0${(mode & FILE_MODE_MAX).toString(8).padStart(3, '0')}`;
  return { bits: bits.join(' and '), suggested };
}

/** A mode as the language writes it: octal, `0755` or `4755`. */
export function octalMode(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`.replace(/^0(?=[0-7]{4,})/, '');
}
