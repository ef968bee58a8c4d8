import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ServiceSpec } from '../core/model/index.js';
import type { WorkloadFile } from './runtime.js';

/**
 * Write a replica's config files and secrets under `<replica dir>/files/<path>`. Secret files
 * are owner-only: the spec's mode with every group and other bit cleared (at most 0600);
 * secrets with `env` become environment variables. Nothing here logs a value.
 */
export function materialize(replicaDir: string, spec: Pick<ServiceSpec, 'configs' | 'secrets'>): { files: WorkloadFile[]; env: Record<string, string> } {
  const root = join(replicaDir, 'files');
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const files: WorkloadFile[] = [];
  const env: Record<string, string> = {};
  const put = (path: string, content: string, mode: number) => {
    const hostPath = join(root, path);
    mkdirSync(dirname(hostPath), { recursive: true, mode: 0o700 });
    writeFileSync(hostPath, content, { mode });
    chmodSync(hostPath, mode);
    files.push({ hostPath, path });
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
