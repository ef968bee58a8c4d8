import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceSpec } from '../core/model/index.js';
import { ensureDirs, writeConfined } from './confine.js';
import type { WorkloadFile } from './runtime.js';

/**
 * Write a replica's config files and secrets under `<replica dir>/files/<path>`, strictly
 * below that directory and never through a symbolic link (agent/confine.ts; a path that
 * would leave it is a Refusal, CCA-E0531). Modes are permission bits only (setuid, setgid
 * and sticky masked off). Secret files are owner-only: the spec's mode with every group and
 * other bit cleared (at most 0600); secrets with `env` become environment variables.
 * Nothing here logs a value.
 */
export function materialize(replicaDir: string, spec: Pick<ServiceSpec, 'configs' | 'secrets'>): { files: WorkloadFile[]; env: Record<string, string> } {
  const root = join(replicaDir, 'files');
  // The replica's own directory must be a real one too (a link there would carry files/
  // somewhere else): ensureDirs checks it before it makes anything below it.
  mkdirSync(replicaDir, { recursive: true });
  ensureDirs(replicaDir, root);
  const files: WorkloadFile[] = [];
  const env: Record<string, string> = {};
  const put = (path: string, content: string, mode: number) => {
    files.push({ hostPath: writeConfined(root, path, content, mode), path });
  };
  for (const c of spec.configs) put(c.path, c.content, c.mode);
  for (const s of spec.secrets) {
    if (s.path !== undefined) put(s.path, s.value, secretMode(s.mode));
    if (s.env !== undefined) env[s.env] = s.value;
  }
  return { files, env };
}

export function secretMode(mode: number): number {
  const owner = mode & 0o600;
  return owner === 0 ? 0o400 : owner;
}
