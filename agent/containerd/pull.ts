import { spawn } from 'node:child_process';
import { makeDiagnostic } from '../../core/diagnostics/index.js';
import { qualifiedImage } from '../../core/model/names.js';
import type { Ctr } from './ctr.js';

/** A pull that did not produce the image: the coded diagnostic the replica carries while the agent retries. */
export class PullFailure extends Error {
  constructor(readonly diagnostic: { code: string; message: string }) {
    super(diagnostic.message);
  }
}

export interface PullRequest {
  /** The reference as the service names it. */
  image: string;
  replica: string;
  service: string;
  node: string;
  policy: 'if-missing' | 'always';
  /** The pull secret's name and value (`user:password`), when the service has one. */
  secret?: { name: string; value: string };
  /** Registries (host or host:port) spoken to over plain HTTP. */
  insecure: readonly string[];
  /** Bytes fetched so far, as ctr reports them. */
  onProgress?: (bytes: number) => void;
  timeoutMs?: number;
}

/**
 * Pull one image into containerd (`ctr images pull`) and return its containerd name and the
 * manifest digest it resolved to. Throws PullFailure with CCA-E0550..E0555.
 *
 * Credentials go on ctr's command line (`--user user:password`), visible to other users of
 * the node in the process list for as long as the pull runs. ctr 1.6 has no other way that
 * works: without the password `--user` prompts on a terminal and panics on a pipe, and a
 * `hosts.toml` Authorization header (`--hosts-dir`) is sent only to the listed host, after
 * which ctr falls back to the bare server without it, turning every 404 into a 401 (tried:
 * docs/agent.md "Images from registries"). The value is never logged, and every message is
 * scrubbed of it.
 */
export async function pullImage(ctr: Ctr, req: PullRequest): Promise<{ name: string; digest: string }> {
  const { ref, registry } = qualifiedImage(req.image);
  if (req.policy === 'if-missing') {
    const have = (await imageDigests(ctr)).get(ref);
    if (have) return { name: ref, digest: have };
  }
  const base = { node: req.node, image: req.image, replica: req.replica, registry, ref };
  let user: string | undefined;
  let password = '';
  if (req.secret) {
    const i = req.secret.value.indexOf(':');
    if (i <= 0) throw failure(makeDiagnostic('CCA-E0555', { secret: req.secret.name, service: req.service }));
    user = req.secret.value.slice(0, i);
    password = req.secret.value.slice(i + 1);
  }
  const plain = isInsecure(registry, req.insecure);
  const args = ['images', 'pull', ...(plain ? ['--plain-http'] : []), ...(user === undefined ? [] : ['--user', `${user}:${password}`]), ref];
  const r = await runPull(ctr, args, req.timeoutMs ?? 600_000, req.onProgress);
  const scrub = (t: string): string => (password === '' ? t : t.split(password).join('***'));
  if (r.code !== 0) {
    const reason = scrub(lastLine(r.stderr) || `ctr exited with ${r.code}`);
    throw failure(classify(reason, base, user));
  }
  const digest = (await imageDigests(ctr)).get(ref);
  if (!digest) throw failure(makeDiagnostic('CCA-E0554', { ...base, reason: `ctr reported success but containerd has no image ${ref}` }));
  return { name: ref, digest };
}

function failure(d: { code: string; message: string }): PullFailure {
  return new PullFailure({ code: d.code, message: d.message });
}

/** Which of ctr's errors means what (ctr 1.6's wording, from the registry's status and Go's net errors). */
export function classify(reason: string, base: { node: string; image: string; replica: string; registry: string; ref: string }, user: string | undefined): { code: string; message: string } {
  const credentials = user === undefined ? 'no credentials were sent: the service has no pull secret' : `user ${user}`;
  if (/no space left on device/i.test(reason)) return makeDiagnostic('CCA-E0553', { ...base, reason });
  if (/\b(401 Unauthorized|403 Forbidden)\b|unauthorized|authorization failed|access to the resource is denied/i.test(reason)) return makeDiagnostic('CCA-E0551', { ...base, credentials });
  if (/: not found\b|404 Not Found|manifest unknown|name unknown/i.test(reason)) return makeDiagnostic('CCA-E0550', { ...base, reason });
  if (/connection refused|no such host|no route to host|network is unreachable|i\/o timeout|TLS handshake|server gave HTTP response to HTTPS client|dial tcp|connection reset|deadline exceeded|timed out/i.test(reason)) {
    return makeDiagnostic('CCA-E0552', { ...base, reason });
  }
  return makeDiagnostic('CCA-E0554', { ...base, reason });
}

/** A registry named by host:port matches a flag naming it, or naming its host alone. */
export function isInsecure(registry: string, insecure: readonly string[]): boolean {
  return insecure.some((r) => r === registry || (!r.includes(':') && registry.split(':')[0] === r));
}

/** containerd name → manifest digest, from `ctr images ls` (REF TYPE DIGEST SIZE ...). */
export async function imageDigests(ctr: Ctr): Promise<Map<string, string>> {
  const { stdout } = await ctr.run(['images', 'ls']);
  const out = new Map<string, string>();
  for (const line of stdout.split('\n').slice(1)) {
    const [name, , digest] = line.trim().split(/\s+/);
    if (name && digest?.startsWith('sha256:')) out.set(name, digest);
  }
  return out;
}

const UNIT: Record<string, number> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 };

/** The last "total:" figure of ctr's progress table ("elapsed: 0.2 s   total: 1.4 MiB (7.0 MiB/s)"), in bytes. */
export function progressBytes(output: string): number | undefined {
  const all = [...output.matchAll(/total:\s+([\d.]+)\s*(B|KiB|MiB|GiB|TiB)\b/g)];
  const m = all[all.length - 1];
  return m ? Math.round(Number(m[1]) * UNIT[m[2]!]!) : undefined;
}

/** `ctr images pull`, streaming its progress table ("total: 1.4 MiB") into onProgress. */
function runPull(ctr: Ctr, args: string[], timeoutMs: number, onProgress?: (bytes: number) => void): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(ctr.bin, ['-a', ctr.address, '-n', ctr.namespace, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let tail = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (b: Buffer) => {
      tail = (tail + b.toString()).slice(-4_096);
      const bytes = progressBytes(tail);
      if (bytes !== undefined && onProgress) onProgress(bytes);
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-16_384);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: 127, stderr: e.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stderr: signal === 'SIGKILL' ? `${stderr}\npull timed out after ${timeoutMs} ms` : stderr });
    });
  });
}

function lastLine(text: string): string {
  // ctr's last line is the error; a warning (logrus `time=... level=warning`) may follow it.
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/^time="[^"]*" level=(warning|info)/.test(l));
  return (lines.find((l) => l.startsWith('ctr: ')) ?? lines[lines.length - 1] ?? '').replace(/^ctr: /, '');
}
