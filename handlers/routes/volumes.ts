import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { VolumeObservation, VolumeRecord } from '../../core/model/facts.js';
import { dnsLabelProblem } from '../../core/model/index.js';
import type { Store } from '../../db/store.js';
import { principalName, requireRole, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { readFacts } from '../../jobs/facts.js';
import { parseQuery } from '../query.js';

const volumesQuery = z.strictObject({ service: z.string().min(1).max(63).optional() });

/**
 * What a volume is, seen from both sides: the agent's report when there is one
 * (`ready`, `creating`, `failed`); `releasing` while a released volume waits out its
 * `keep_for` (its data still on the node, `deleteAt` says until when); `kept` when an
 * operator's hold cancelled that; `deleting` when the agent still reports a volume the
 * storage controller no longer wants (the agent deletes it on its next sync, or once no
 * assignment there mounts it); `not reported` when it is wanted and no report has come yet.
 */
export type VolumeState = VolumeObservation['state'] | 'releasing' | 'kept' | 'deleting' | 'not reported';

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
  /** While releasing: when the data is deleted, and how long that is from the answer's time. */
  deleteAt?: number;
  deletesInMs?: number;
  /** How long the data stays once released. */
  keepForMs?: number;
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
export async function volumeViews(store: Store, service?: string, now = Date.now()): Promise<{ revision: number; volumes: VolumeView[] }> {
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
      const state: VolumeState = d?.releasing ? 'releasing' : d?.kept ? 'kept' : o ? (d ? o.state : 'deleting') : 'not reported';
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
        ...(d ? { keepForMs: d.keepForMs } : {}),
        ...(d?.releasing ? { deleteAt: d.releasing.deleteAt, deletesInMs: Math.max(0, d.releasing.deleteAt - now) } : {}),
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

/**
 * `GET /v1/volumes[?service=NAME]`: local volumes, wanted and reported (`cca get volumes`).
 * `POST|DELETE /v1/volumes/{service}/{volume}/hold[?node=NAME]`: an operator keeps a
 * volume's data past its keep_for (`cca volume keep`), or lets the release run again
 * (`cca volume release`); on every node that holds it, or on one.
 */
export function volumeRoutes(deps: ServerDeps) {
  return new Hono<AuthEnv>()
    .get('/v1/volumes', requireRole('reader'), async (c) => {
      const q = parseQuery(c, volumesQuery);
      // A name that could never be a service is simply not found (as for /v1/services/{name}).
      if (q.service !== undefined && dnsLabelProblem(q.service, 63)) throw new CcaError('CCA-E0609', { kind: 'service', name: q.service });
      return c.json(await volumeViews(deps.store, q.service));
    })
    .post('/v1/volumes/:service/:volume/hold', requireRole('deployer'), async (c) => {
      const targets = await holdTargets(deps.store, c.req.param('service'), c.req.param('volume'), parseQuery(c, holdQuery).node);
      const at = Date.now();
      const ops = targets.map((v) => ({ put: { key: buildKey('volumeHold', v.node, v.service, v.volume), value: encodeFact('volumeHold', { at, by: principalName(c.get('principal')) }) } }));
      // Only volumes that still exist: a hold on one deleted meanwhile would keep nothing.
      const compares = targets.map((v) => ({ key: buildKey('volume', v.node, v.service, v.volume), target: 'createRevision' as const, op: '!=' as const, value: 0 }));
      const r = await deps.store.txn({ compare: compares, success: ops });
      if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `the volumes of ${c.req.param('service')}` });
      return c.json({ revision: r.revision, held: targets.map(({ node, service, volume, deleteAt }) => ({ node, service, volume, ...(deleteAt !== undefined ? { deleteAt } : {}) })) });
    })
    .delete('/v1/volumes/:service/:volume/hold', requireRole('deployer'), async (c) => {
      const { service, volume } = c.req.param();
      const node = parseQuery(c, holdQuery).node;
      const holds = await readFacts(deps.store, 'volumeHold', []);
      const mine = holds.facts.filter((f) => {
        const [n, s, v] = f.key.split('/').slice(-3);
        return s === service && v === volume && (node === undefined || n === node);
      });
      if (mine.length === 0) throw new CcaError('CCA-E0415', { service, volume, ...(node !== undefined ? { node } : {}), reason: 'no hold to release' });
      const r = await deps.store.txn({ compare: [], success: mine.map((f) => ({ delete: { key: f.key } })) });
      return c.json({ revision: r.revision, released: mine.map((f) => f.key.split('/').slice(-3)[0]) });
    });
}

const holdQuery = z.strictObject({ node: z.string().min(1).max(253).optional() });

/** The volumes a hold names: the service's volume on every node that has it, or on one. */
async function holdTargets(store: Store, service: string, volume: string, node?: string): Promise<VolumeView[]> {
  const { volumes } = await volumeViews(store, service).catch(() => ({ volumes: [] as VolumeView[] }));
  const found = volumes.filter((v) => v.volume === volume && v.wanted && (node === undefined || v.node === node));
  if (found.length === 0) throw new CcaError('CCA-E0415', { service, volume, ...(node !== undefined ? { node } : {}), reason: 'no such volume is on any node' + (node !== undefined ? ` named ${node}` : '') });
  return found;
}
