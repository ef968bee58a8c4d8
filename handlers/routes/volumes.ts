import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import { buildKey } from '../../core/keys.js';
import type { VolumeObservation, VolumeRecord } from '../../core/model/facts.js';
import { dnsLabelProblem } from '../../core/model/index.js';
import type { Store } from '../../db/store.js';
import { requireRole, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { readFacts } from '../../jobs/facts.js';
import { parseQuery } from '../query.js';

const volumesQuery = z.strictObject({ service: z.string().min(1).max(63).optional() });

/**
 * What a volume is, seen from both sides: the agent's report when there is one
 * (`ready`, `creating`, `failed`); `releasing` when the agent still reports a volume the
 * storage controller no longer wants (the agent deletes it on its next sync, or once no
 * assignment there mounts it); `not reported` when it is wanted and no report has come yet.
 */
export type VolumeState = VolumeObservation['state'] | 'releasing' | 'not reported';

export interface VolumeView {
  node: string;
  service: string;
  volume: string;
  state: VolumeState;
  /** The storage controller wants it on this node (`/volumes/…` exists). */
  wanted: boolean;
  /** The wanted size; the reported one for a volume no longer wanted. */
  sizeBytes: number;
  usedBytes?: number;
  path?: string;
  /** The replica last placed here with this volume. */
  usedBy?: string;
  usedAt?: number;
  diagnostic?: { code: string; message: string };
  /** The two facts as stored, for a diagnosis (either may be missing). */
  desired?: VolumeRecord;
  observed?: VolumeObservation;
}

/**
 * Every local volume, desired joined with observed, read at one revision (both prefixes
 * and the service spec), sorted by node, service, volume. The keys lead with the node, so a
 * service filter reads them all and keeps that service's: there are few volumes.
 */
export async function volumeViews(store: Store, service?: string): Promise<{ revision: number; volumes: VolumeView[] }> {
  const revision = await store.revision();
  const [desired, observed, spec] = await Promise.all([
    readFacts(store, 'volume', [], revision),
    readFacts(store, 'observedVolume', [], revision),
    service ? store.get(buildKey('service', service), { revision }) : Promise.resolve(undefined),
  ]);
  const byKey = new Map<string, { node: string; service: string; volume: string; desired?: VolumeRecord; observed?: VolumeObservation }>();
  const entry = (key: string) => {
    // Both kinds end in <node>/<service>/<volume>; the observed value does not name them.
    const [node, svc, volume] = key.split('/').slice(-3) as [string, string, string];
    const id = `${node}/${svc}/${volume}`;
    let e = byKey.get(id);
    if (!e) byKey.set(id, (e = { node, service: svc, volume }));
    return e;
  };
  for (const f of desired.facts) entry(f.key).desired = f.value;
  for (const f of observed.facts) entry(f.key).observed = f.value;
  const volumes = [...byKey.values()]
    .filter((e) => service === undefined || e.service === service)
    .map((e): VolumeView => {
      const { desired: d, observed: o } = e;
      const state: VolumeState = o ? (d ? o.state : 'releasing') : 'not reported';
      return {
        node: e.node,
        service: e.service,
        volume: e.volume,
        state,
        wanted: d !== undefined,
        sizeBytes: d?.sizeBytes ?? o!.sizeBytes,
        ...(o?.usedBytes !== undefined ? { usedBytes: o.usedBytes } : {}),
        ...(o ? { path: o.path } : {}),
        ...(d?.usedBy ? { usedBy: d.usedBy } : {}),
        ...(d?.usedAt ? { usedAt: d.usedAt } : {}),
        ...(o?.diagnostic ? { diagnostic: o.diagnostic } : {}),
        ...(d ? { desired: d } : {}),
        ...(o ? { observed: o } : {}),
      };
    })
    .sort((a, b) => cmp(a.node, b.node) || cmp(a.service, b.service) || cmp(a.volume, b.volume));
  // A deleted service whose volumes are still being released is still known here.
  if (service !== undefined && !spec && volumes.length === 0) throw new CcaError('CCA-E0609', { kind: 'service', name: service });
  return { revision, volumes };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** `GET /v1/volumes[?service=NAME]`: local volumes, wanted and reported (`cca get volumes`). */
export function volumeRoutes(deps: ServerDeps) {
  return new Hono<AuthEnv>().get('/v1/volumes', requireRole('reader'), async (c) => {
    const q = parseQuery(c, volumesQuery);
    // A name that could never be a service is simply not found (as for /v1/services/{name}).
    if (q.service !== undefined && dnsLabelProblem(q.service, 63)) throw new CcaError('CCA-E0609', { kind: 'service', name: q.service });
    return c.json(await volumeViews(deps.store, q.service));
  });
}
