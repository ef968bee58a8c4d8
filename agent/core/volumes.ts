import { makeDiagnostic } from '../../core/diagnostics/index.js';
import type { Assignment } from '../../core/model/index.js';
import { Refusal, ServerError } from './errors.js';
import type { ControlPlane, LocalVolumes } from './ports.js';

/** Volumes are synced this often, and re-reported unchanged this often. */
export const VOLUME_SYNC_MS = 2_000;
export const VOLUME_REFRESH_MS = 30_000;

export interface VolumeSyncDeps {
  node: string;
  control: ControlPlane;
  volumes: LocalVolumes;
  log: (line: string) => void;
  event: (kind: string, message: string) => void;
}

/**
 * Volumes: create what the storage controller wants here, delete what it no longer wants
 * and no assignment here mounts, and report what the node holds (under the tenure), only
 * when something but the time changed (or every 30 s): the storage controller watches these.
 */
export class VolumeSync {
  private syncing = false;
  private reported = '';
  private reportedAt = 0;
  private unsupported = false;

  constructor(private readonly d: VolumeSyncDeps) {}

  /** Forget what was reported: the next sync reports again (a new tenure). */
  reset(): void {
    this.reported = '';
  }

  /** One sync; throws the call's error (the caller's usual handling). */
  async sync(desired: readonly Assignment[], tenure: number, now: number, wall: number): Promise<void> {
    if (this.syncing || this.unsupported) return;
    this.syncing = true;
    try {
      const volumes = await this.d.control.volumes();
      const wanted = new Set(volumes.map((v) => `${v.service}/${v.volume}`));
      for (const a of desired) for (const v of a.spec.volumes) wanted.add(`${a.service}/${v.name}`);
      for (const v of volumes) {
        try {
          this.d.volumes.ensure(v.service, v.volume, v.sizeBytes);
        } catch (e) {
          // A volume whose names would climb out of the volumes directory is not made; the others are.
          if (!(e instanceof Refusal)) throw e;
          this.d.log(`volume refused: ${e.reason}`);
        }
      }
      for (const v of this.d.volumes.list()) {
        if (wanted.has(`${v.service}/${v.volume}`)) continue;
        this.d.volumes.remove(v.service, v.volume);
        this.d.log(`deleted volume ${v.volume} of ${v.service}: no longer wanted on this node`);
        this.d.event('volume-deleted', `volume ${v.volume} of ${v.service} deleted (released by the storage controller)`);
      }
      const report = this.d.volumes.list().map((v) => {
        const over = v.usedBytes > v.sizeBytes ? makeDiagnostic('CCA-E0521', { volume: v.volume, service: v.service, node: this.d.node, usedBytes: v.usedBytes, sizeBytes: v.sizeBytes }) : undefined;
        return { service: v.service, volume: v.volume, state: 'ready' as const, path: v.path, sizeBytes: v.sizeBytes, usedBytes: v.usedBytes, ...(over ? { diagnostic: { code: over.code, message: over.message } } : {}), at: wall };
      });
      const fp = JSON.stringify(report.map(({ at: _at, ...rest }) => rest));
      if (fp === this.reported && now - this.reportedAt < VOLUME_REFRESH_MS) return;
      await this.d.control.observedVolumes(tenure, report);
      this.reported = fp;
      this.reportedAt = now;
    } catch (e) {
      // A server without the volume routes (an older version): say so once, stop asking.
      if (e instanceof ServerError && e.status === 404 && e.diagnostic.code === 'CCA-E0604') {
        this.unsupported = true;
        this.d.log('the server has no volume routes: volumes are created for replicas but not reported');
      } else throw e;
    } finally {
      this.syncing = false;
    }
  }
}
