/**
 * Why a workload's command could not be started, as CCA-E0530 naming the command, the node,
 * the runtime and a fix. The facts come from the runtime (the spawn error, the exit code, the
 * last lines of stderr) and, on the process runtime, from looking the command up on the
 * workload's PATH; the reasoning here is pure so every case is unit-tested.
 */
import { makeDiagnostic } from '../../core/diagnostics/index.js';
import type { ExitDetail, RuntimeName } from './runtime.js';

export interface StartFailureInput {
  runtime: RuntimeName;
  node: string;
  replica: string;
  service: string;
  image: string;
  argv: readonly string[];
  exitCode: number | undefined;
  detail: ExitDetail | undefined;
}

const clip = (s: string, max = 160): string => (s.length > max ? `${s.slice(0, max)}…` : s);

/** Debian packages for programs people commonly name in a spec. */
const PACKAGES: Record<string, string> = {
  python3: 'python3', python: 'python-is-python3', node: 'nodejs', nodejs: 'nodejs', npm: 'npm', curl: 'curl', wget: 'wget',
  nginx: 'nginx', 'redis-server': 'redis-server', postgres: 'postgresql', psql: 'postgresql-client', java: 'default-jre-headless',
  perl: 'perl', ruby: 'ruby', php: 'php-cli', bash: 'bash', nc: 'netcat-openbsd', socat: 'socat', jq: 'jq', git: 'git',
  memcached: 'memcached', haproxy: 'haproxy', caddy: 'caddy', busybox: 'busybox-static',
};

/** The name the shell complained about: dash ("sh: 1: x: not found"), bash, busybox ash. */
function shellMissing(tail: string): { name: string; kind: 'not found' | 'permission denied' } | undefined {
  const lines = tail.trim().split('\n').reverse();
  for (const line of lines) {
    const m = /(?:^|:\s)([^\s:][^:]*): (?:command )?not found\s*$/.exec(line) ?? /(?:^|:\s)([^\s:][^:]*): [Pp]ermission denied\s*$/.exec(line);
    if (m?.[1]) return { name: m[1].trim(), kind: /denied/i.test(line) ? 'permission denied' : 'not found' };
  }
  return undefined;
}

function fixFor(input: StartFailureInput, program: string, missingInterpreter?: string): string {
  const base = program.split('/').pop() ?? program;
  const wanted = missingInterpreter ? (missingInterpreter.split('/').pop() ?? missingInterpreter) : base;
  const pkg = PACKAGES[wanted];
  if (input.runtime === 'containerd') {
    return `image ${input.image} has no usable \`${wanted}\`: use an image that has it, or change the command (check with \`ctr run --rm ${input.image} x ls -l $(dirname ${program})\`)`;
  }
  if (base === 'httpd' && !missingInterpreter) {
    return `use image ccattler/toolbox:1 (its httpd runs on every node), or install busybox-static on node ${input.node} and use image busybox:1.35`;
  }
  const install = pkg ? `apt-get install -y ${pkg}` : `install \`${wanted}\``;
  return `on node ${input.node}: ${install}, or give the command's absolute path; the process runtime runs commands from the host, with only the image's own tools put first on PATH`;
}

/**
 * CCA-E0530 for a workload that could not start its command, or undefined when the exit does
 * not look like one (a program that ran and exited 127 by itself still says "not found" on
 * stderr; one that did not is left as a plain failure).
 */
export function startFailure(input: StartFailureInput): { code: string; message: string } | undefined {
  const program = input.argv[0] ?? '';
  const spawn = input.detail?.spawnError;
  const tail = input.detail?.stderrTail ?? '';
  let command = program;
  let why: string | undefined;
  let interpreter: string | undefined;
  const l = input.detail?.lookup;
  if (spawn || (input.runtime === 'containerd' && (input.exitCode === 126 || input.exitCode === 127) && !shellMissing(tail))) {
    const msg = spawn?.message ?? '';
    if (l && !l.found) why = `not found on the workload's PATH (${clip(l.path)})`;
    else if (l?.found && !l.executable) why = `${l.file} is not executable`;
    else if (l?.found && l.interpreter && !l.interpreter.exists) {
      interpreter = l.interpreter.path;
      why = `${l.file} starts with #!${l.interpreter.path}, which is not installed`;
    } else if (spawn?.errno === 'EACCES' || /permission denied/i.test(msg)) why = 'permission denied (not executable)';
    else if (spawn?.errno === 'ENOENT' || /not found|no such file/i.test(msg)) why = 'no such program in the image or on PATH';
    else if (spawn) why = msg;
    else return undefined;
  } else if (input.exitCode === 126 || input.exitCode === 127) {
    const s = shellMissing(tail);
    if (!s) return undefined;
    command = s.name;
    why = s.kind === 'not found' ? `the shell started by \`${program}\` could not find \`${s.name}\` (exit ${input.exitCode})` : `the shell started by \`${program}\` could not execute \`${s.name}\`: permission denied (exit ${input.exitCode})`;
  } else {
    return undefined;
  }
  const d = makeDiagnostic('CCA-E0530', {
    replica: input.replica,
    service: input.service,
    node: input.node,
    runtime: input.runtime,
    command,
    why,
    fix: fixFor(input, command, interpreter),
  });
  // The fix travels with the message: observations carry code and message only.
  return { code: d.code, message: `${d.message}; fix: ${d.fix}` };
}
