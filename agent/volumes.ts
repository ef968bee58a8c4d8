import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDiagnostic, messageOf } from '../core/diagnostics/index.js';
import type { ServiceSpec } from '../core/model/index.js';
import { checkVolumeNames, volumeNamesOk } from './confine.js';
import type { WorkloadVolume } from './runtime.js';
import type { VolumeInfo } from './core/ports.js';

/**
 * Local volumes: one directory per (service, volume) under the agent's state directory,
 *
 *   volumes/<service>/<volume>/volume.json   { sizeBytes, createdAt }
 *   volumes/<service>/<volume>/data/         what the workload sees at its mountPath
 *
 * keyed by service and volume name, not by replica: a replacement (a new replica id) of
 * the service on this node mounts the same `data/`, so what a replica wrote is still there.
 * The size is recorded and the usage measured and reported, not enforced (a loop device
 * with a filesystem of that size would enforce it, but needs root; docs/volumes.md).
 * Deleted only when the control plane no longer wants the volume on this node and no
 * assignment here mounts it.
 */
export type { VolumeInfo };

/** Entries one measurement of a volume's used bytes visits at most (a huge tree costs a bounded walk). */
export const MEASURE_LIMIT = 100_000;

export class VolumeDir {
  readonly root: string;

  constructor(stateDir: string) {
    this.root = join(stateDir, 'volumes');
  }

  dataPath(service: string, volume: string): string {
    checkVolumeNames(service, volume);
    return join(this.root, service, volume, 'data');
  }

  /**
   * Create (or find) the volume; records its size. Idempotent. Throws CCA-E0520 when it
   * cannot, a Refusal (CCA-E0531) when a name is not a label (it would name another directory).
   */
  ensure(service: string, volume: string, sizeBytes: number): string {
    checkVolumeNames(service, volume);
    const dir = join(this.root, service, volume);
    const data = join(dir, 'data');
    try {
      mkdirSync(data, { recursive: true, mode: 0o755 });
      const meta = join(dir, 'volume.json');
      const current = this.meta(service, volume);
      if (current?.sizeBytes !== sizeBytes) {
        writeFileSync(`${meta}.tmp`, JSON.stringify({ sizeBytes, createdAt: current?.createdAt ?? Date.now() }));
        renameSync(`${meta}.tmp`, meta);
      }
    } catch (e) {
      const d = makeDiagnostic('CCA-E0520', { volume, service, path: data, reason: messageOf(e) });
      throw new Error(`${d.code} ${d.message}`);
    }
    return data;
  }

  /** The volumes a spec mounts, created if needed, as the runtime mounts them. */
  mountsFor(spec: Pick<ServiceSpec, 'name' | 'volumes'>): WorkloadVolume[] {
    return spec.volumes.map((v) => ({ name: v.name, hostPath: this.ensure(spec.name, v.name, v.sizeBytes), path: v.mountPath, readOnly: v.readOnly }));
  }

  list(): VolumeInfo[] {
    const out: VolumeInfo[] = [];
    for (const service of safeReaddir(this.root)) {
      for (const volume of safeReaddir(join(this.root, service))) {
        // Only directories this class could have made (and may remove).
        if (!volumeNamesOk(service, volume)) continue;
        const meta = this.meta(service, volume);
        const path = this.dataPath(service, volume);
        if (!meta || !existsSync(path)) continue;
        out.push({ service, volume, path, sizeBytes: meta.sizeBytes, usedBytes: usedBytes(path) });
      }
    }
    return out;
  }

  remove(service: string, volume: string): void {
    checkVolumeNames(service, volume);
    rmSync(join(this.root, service, volume), { recursive: true, force: true });
  }

  private meta(service: string, volume: string): { sizeBytes: number; createdAt: number } | undefined {
    try {
      return JSON.parse(readFileSync(join(this.root, service, volume, 'volume.json'), 'utf8')) as { sizeBytes: number; createdAt: number };
    } catch {
      return undefined;
    }
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir).filter((n) => !n.startsWith('.'));
  } catch {
    return [];
  }
}

/** Bytes of regular files under a directory (symlinks not followed), stopping after many entries. */
export function usedBytes(dir: string): number {
  let total = 0;
  let seen = 0;
  const stack = [dir];
  while (stack.length > 0 && seen < MEASURE_LIMIT) {
    const d = stack.pop()!;
    for (const name of entries(d)) {
      seen++;
      const p = join(d, name);
      try {
        const st = lstatSync(p);
        if (st.isDirectory()) stack.push(p);
        else if (st.isFile()) total += st.size;
      } catch {
        // removed while we looked
      }
    }
  }
  return total;
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** `CCA_VOLUME_<NAME>`: the environment variable naming a volume's directory (process runtime). */
export function volumeEnvName(volume: string): string {
  return `CCA_VOLUME_${volume.toUpperCase().replace(/-/g, '_')}`;
}
