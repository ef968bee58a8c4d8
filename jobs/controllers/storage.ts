import { buildKey, prefixOf } from '../../core/keys.js';
import type { VolumeRecord } from '../../core/model/facts.js';
import { formatDuration } from '../../core/model/quantity.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { absent, deleteKey, putFact, unchanged, type Fact } from '../facts.js';
import { absentEvidence, causedByFact, decide, decisionKey, evidenceOf } from '../decisions/record.js';
import { indexBy, listEvery } from './view.js';
import { DEFAULTS } from '../../core/model/defaults.js';
import { commitEach, type Write } from '../write.js';
import { retrySoon } from '../retry.js';

export const STORAGE_CONTROLLER = 'storage';
/** Volume writes per step; the rest in the next step, at once. */
export const MAX_WRITES = 64;

/** A volume some assignment needs on its node: the first assignment (by replica id) that needs it. */
interface Want {
  node: string;
  service: string;
  volume: string;
  sizeBytes: number;
  assignment: Fact<'assigned'>;
  /** The assignment placed here most recently that mounts it (the volume's last user). */
  latest: Fact<'assigned'>;
}

/**
 * The storage controller: the only writer of `/volumes/`. A volume is wanted on a node as
 * soon as an assignment there needs it (its spec declares it), and kept — with the data the
 * agent holds for it — while the service exists and still declares it, whether or not a
 * replica runs there now: a replacement on the same node finds its data again, and the
 * scheduler steers it there. It is released (the agent then deletes the directory) only
 * when no assignment on the node uses it and the service is deleted or no longer declares
 * it. The retention rule is stated in docs/volumes.md.
 */
export const storageController: Controller = {
  name: STORAGE_CONTROLLER,
  watches: [prefixOf('service'), prefixOf('assigned'), prefixOf('volume'), prefixOf('observedVolume'), prefixOf('volumeHold')],
  async reconcile(ctx: StepContext): Promise<Wakeup> {
    const { store, now } = ctx;
    const [services, assigned, volumes, allocations, observed, holdFacts] = await listEvery(store, 'service', 'assigned', 'volume', 'allocation', 'observedVolume', 'volumeHold');
    const holds = indexBy(holdFacts, (h) => h.key);
    const specs = indexBy(services, (s) => s.value.name);
    const allocs = indexBy(allocations, (a) => a.value.node);
    const records = indexBy(volumes, (v) => v.key);
    const wants = wanted(assigned, specs);
    const txns: Write[] = [];
    for (const w of wants.values()) {
      const key = buildKey('volume', w.node, w.service, w.volume);
      const existing = records.get(key);
      if (existing && existing.value.sizeBytes === w.sizeBytes) {
        if (existing.value.releasing || existing.value.kept) txns.push(restoreTxn(existing, w.latest, now));
        else if (existing.value.usedAt < w.latest.value.placedAt) txns.push(usedTxn(w, existing, now));
        continue;
      }
      txns.push(wantTxn(w, key, existing, specs.get(w.service), now));
    }
    let next: number | undefined;
    for (const v of volumes) {
      if (wants.has(v.key)) continue;
      const spec = specs.get(v.value.service);
      const declared = spec?.value.volumes.find((d) => d.name === v.value.volume);
      if (declared) {
        if (v.value.releasing || v.value.kept) txns.push(restoreTxn(v, spec!, now));
        else if (declared.sizeBytes !== v.value.sizeBytes || declared.keepForMs !== v.value.keepForMs) txns.push(resizeTxn(v, spec!, declared, now));
        continue;
      }
      const holdKey = buildKey('volumeHold', v.value.node, v.value.service, v.value.volume);
      const hold = holds.get(holdKey);
      const alloc = allocs.get(v.value.node);
      if (hold) {
        if (!v.value.kept) txns.push(keepTxn(v, hold, now));
      } else if (!v.value.releasing || v.value.kept) {
        // Released now: the data waits out keep_for (0 = at once), so a mistaken delete can be undone.
        txns.push(releaseWrite(v.value.keepForMs === 0 ? 'deleting' : 'releasing', v, spec, alloc, holdKey, now));
      } else if (now >= v.value.releasing.deleteAt) {
        txns.push(releaseWrite('deleting', v, spec, alloc, holdKey, now));
      } else {
        next = Math.min(next ?? Infinity, v.value.releasing.deleteAt);
      }
    }
    // Desired against observed: the first report of each wanted volume ready at its size is a decision.
    const seen = indexBy(observed, (o) => o.key);
    for (const v of volumes) {
      if (txns.some((t) => t.compares.some((c) => c.key === v.key))) continue;
      const obs = seen.get(buildKey('observedVolume', v.value.node, v.value.service, v.value.volume));
      if (!obs || obs.value.state !== 'ready' || obs.value.sizeBytes !== v.value.sizeBytes) continue;
      const key = readyKey(v);
      if (await store.get(key)) continue;
      txns.push(readyTxn(v, obs));
    }
    if ((await commitEach(store, txns.slice(0, MAX_WRITES))) > 0) return retrySoon(now);
    if (txns.length > MAX_WRITES) return { at: now };
    return next === undefined ? {} : { at: next };
  },
};

/**
 * Every volume an assignment needs, keyed by its `/volumes/` key. The size comes from the
 * service's current spec when it still declares the volume (a resize), else from the
 * assignment's own spec (an old replica still using a volume the spec dropped).
 */
export function wanted(assigned: readonly Fact<'assigned'>[], specs: Map<string, Fact<'service'>>): Map<string, Want> {
  const out = new Map<string, Want>();
  const sorted = [...assigned].sort((a, b) => (a.value.replica < b.value.replica ? -1 : 1));
  for (const a of sorted) {
    for (const v of a.value.spec.volumes) {
      const key = buildKey('volume', a.value.node, a.value.service, v.name);
      const seen = out.get(key);
      if (seen) {
        if (a.value.placedAt > seen.latest.value.placedAt) seen.latest = a;
        continue;
      }
      const current = specs.get(a.value.service)?.value.volumes.find((d) => d.name === v.name);
      out.set(key, { node: a.value.node, service: a.value.service, volume: v.name, sizeBytes: current?.sizeBytes ?? v.sizeBytes, assignment: a, latest: a });
    }
  }
  return out;
}

function wantTxn(w: Want, key: string, existing: Fact<'volume'> | undefined, spec: Fact<'service'> | undefined, now: number): Write {
  const serviceKey = buildKey('service', w.service);
  const keepForMs = declaredIn(spec, w.volume)?.keepForMs ?? declaredIn(w.assignment, w.volume)?.keepForMs ?? DEFAULTS.volumeKeepForMs;
  const record: VolumeRecord = { node: w.node, service: w.service, volume: w.volume, sizeBytes: w.sizeBytes, replica: existing?.value.replica ?? w.assignment.value.replica, at: existing?.value.at ?? now, usedAt: Math.max(existing?.value.usedAt ?? 0, w.latest.value.placedAt), usedBy: w.latest.value.replica, keepForMs, kept: false };
  const d = decide({
    kind: 'service',
    subject: w.service,
    controller: STORAGE_CONTROLLER,
    action: existing ? `volume ${w.volume} on ${w.node} resized to ${w.sizeBytes} bytes` : `volume ${w.volume} wanted on ${w.node}`,
    tag: `storage-${existing ? 'resize' : 'want'}-${w.node}-${w.volume}`,
    at: now,
    evidence: [evidenceOf(w.assignment), ...(spec ? [evidenceOf(spec)] : [absentEvidence(serviceKey)]), ...(existing ? [evidenceOf(existing)] : [])],
    cause: spec ? causedByFact(spec) : causedByFact(w.assignment),
    reasons: existing
      ? [`the spec of ${w.service} sizes volume ${w.volume} at ${w.sizeBytes} bytes (was ${existing.value.sizeBytes})`]
      : [`replica ${w.assignment.value.replica} is placed on ${w.node} and mounts volume ${w.volume}`, `${w.sizeBytes} bytes; kept while ${w.service} declares it, for replacements on ${w.node}`],
  });
  return {
    compares: [unchanged(existing, key), unchanged(w.assignment), unchanged(spec, serviceKey), ...d.compares],
    ops: [putFact('volume', [w.node, w.service, w.volume], record), ...d.ops],
  };
}

/** A new replica placed with the volume on its node: the record names the volume's last user. */
function usedTxn(w: Want, existing: Fact<'volume'>, now: number): Write {
  const a = w.latest.value;
  const d = decide({
    kind: 'service',
    subject: w.service,
    controller: STORAGE_CONTROLLER,
    action: `volume ${w.volume} on ${w.node} used by ${a.replica}`,
    tag: `storage-use-${w.node}-${w.volume}-${a.replica}`,
    at: now,
    evidence: [evidenceOf(w.latest), evidenceOf(existing)],
    cause: causedByFact(w.latest),
    reasons: [`replica ${a.replica} is placed on ${w.node} and mounts volume ${w.volume}: its data there is the newest of ${w.service}'s`],
  });
  return {
    compares: [unchanged(existing), unchanged(w.latest), ...d.compares],
    ops: [putFact('volume', [w.node, w.service, w.volume], { ...existing.value, usedAt: a.placedAt, usedBy: a.replica }), ...d.ops],
  };
}

/** One "ready" decision per want of a volume on a node (and per size): the record's time and size name it. */
function readyKey(v: Fact<'volume'>): string {
  return decisionKey('service', v.value.service, v.value.at, `storage-ready-${v.value.node}-${v.value.volume}-${v.value.sizeBytes}`);
}

function readyTxn(v: Fact<'volume'>, obs: Fact<'observedVolume'>): Write {
  const { node, service, volume } = v.value;
  const d = decide({
    kind: 'service',
    subject: service,
    controller: STORAGE_CONTROLLER,
    action: `volume ${volume} ready on ${node}`,
    tag: `storage-ready-${node}-${volume}-${v.value.sizeBytes}`,
    at: v.value.at,
    evidence: [evidenceOf(v), evidenceOf(obs)],
    cause: causedByFact(obs),
    reasons: [`the agent of ${node} reports ${obs.value.path}: ${obs.value.sizeBytes} bytes, ${obs.value.usedBytes ?? 0} used`],
  });
  return { compares: [unchanged(v), unchanged(obs), ...d.compares], ops: d.ops };
}

/** A retained volume (no replica on its node now) follows the spec's size and keep_for too. */
function resizeTxn(v: Fact<'volume'>, spec: Fact<'service'>, declared: { sizeBytes: number; keepForMs: number }, now: number): Write {
  const { node, service, volume } = v.value;
  const { sizeBytes, keepForMs } = declared;
  if (sizeBytes === v.value.sizeBytes) {
    const d = decide({
      kind: 'service',
      subject: service,
      controller: STORAGE_CONTROLLER,
      action: `volume ${volume} on ${node} kept for ${formatDuration(keepForMs)} once released`,
      tag: `storage-keep-for-${node}-${volume}`,
      at: now,
      evidence: [evidenceOf(v), evidenceOf(spec)],
      cause: causedByFact(spec),
      reasons: [`the spec of ${service} sets keep_for = ${formatDuration(keepForMs)} on volume ${volume} (was ${formatDuration(v.value.keepForMs)})`],
    });
    return { compares: [unchanged(v), unchanged(spec), ...d.compares], ops: [putFact('volume', [node, service, volume], { ...v.value, keepForMs }), ...d.ops] };
  }
  const d = decide({
    kind: 'service',
    subject: service,
    controller: STORAGE_CONTROLLER,
    action: `volume ${volume} on ${node} resized to ${sizeBytes} bytes`,
    tag: `storage-resize-${node}-${volume}`,
    at: now,
    evidence: [evidenceOf(v), evidenceOf(spec)],
    cause: causedByFact(spec),
    reasons: [`the spec of ${service} sizes volume ${volume} at ${sizeBytes} bytes (was ${v.value.sizeBytes})`],
  });
  return { compares: [unchanged(v), unchanged(spec), ...d.compares], ops: [putFact('volume', [node, service, volume], { ...v.value, sizeBytes, keepForMs }), ...d.ops] };
}

/**
 * Release a volume no assignment uses whose service no longer declares it: `releasing` marks
 * it and keeps the data for keep_for; `deleting` removes the record (the agent then deletes
 * the data). The node's allocation record changes with every placement and release there,
 * so comparing it rules out an assignment placed on the node since the read; the hold's
 * absence rules out an operator keeping it since.
 */
function releaseWrite(step: 'releasing' | 'deleting', v: Fact<'volume'>, spec: Fact<'service'> | undefined, alloc: Fact<'allocation'> | undefined, holdKey: string, now: number): Write {
  const { node, service, volume, keepForMs } = v.value;
  const serviceKey = buildKey('service', service);
  const allocKey = buildKey('allocation', node);
  const keepFor = formatDuration(keepForMs);
  const d = decide({
    kind: 'service',
    subject: service,
    controller: STORAGE_CONTROLLER,
    action: step === 'releasing' ? `volume ${volume} on ${node} released: its data is deleted in ${keepFor}` : `volume ${volume} deleted on ${node}`,
    tag: `storage-${step === 'releasing' ? 'releasing' : 'release'}-${node}-${volume}`,
    at: now,
    evidence: [evidenceOf(v), spec ? evidenceOf(spec) : absentEvidence(serviceKey)],
    cause: causedByFact(spec ?? { key: serviceKey, modRevision: 0 }),
    reasons: [
      spec ? `${service} no longer declares volume ${volume}` : `service ${service} was deleted`,
      step === 'releasing'
        ? `kept for ${keepFor} (keep_for): \`cca volume keep ${service} ${volume}\` or applying ${service} with the volume again cancels the deletion`
        : keepForMs === 0
          ? 'keep_for = 0: deleted at once'
          : `released ${keepFor} ago (keep_for) and nobody kept it`,
      ...(step === 'deleting' ? [`no replica on ${node} uses it; the agent deletes its data`] : []),
    ],
  });
  const releasing = { since: now, deleteAt: now + keepForMs, why: spec ? ('undeclared' as const) : ('service-deleted' as const) };
  return {
    compares: [unchanged(v), unchanged(spec, serviceKey), alloc ? unchanged(alloc) : absent(allocKey), absent(holdKey), ...d.compares],
    ops: [step === 'releasing' ? putFact('volume', [node, service, volume], { ...v.value, releasing, kept: false }) : deleteKey(v.key), ...d.ops],
  };
}

function declaredIn(f: Fact<'service'> | Fact<'assigned'> | undefined, volume: string): { keepForMs: number } | undefined {
  const spec = f === undefined ? undefined : 'volumes' in f.value ? f.value : f.value.spec;
  return spec?.volumes.find((d) => d.name === volume);
}

/** An operator's hold: the pending deletion is cancelled while the hold stays. */
function keepTxn(v: Fact<'volume'>, hold: Fact<'volumeHold'>, now: number): Write {
  const { node, service, volume } = v.value;
  const { releasing: _, ...rest } = v.value;
  const d = decide({
    kind: 'service',
    subject: service,
    controller: STORAGE_CONTROLLER,
    action: `volume ${volume} on ${node} kept by an operator`,
    tag: `storage-kept-${node}-${volume}`,
    at: now,
    evidence: [evidenceOf(v), evidenceOf(hold)],
    cause: causedByFact(hold),
    reasons: [`an operator holds it (\`cca volume keep\`); its data stays until \`cca volume release ${service} ${volume}\``],
  });
  return { compares: [unchanged(v), unchanged(hold), ...d.compares], ops: [putFact('volume', [node, service, volume], { ...rest, kept: true }), ...d.ops] };
}

/** Wanted or declared again while released or kept: back to an ordinary retained volume. */
function restoreTxn(v: Fact<'volume'>, cause: Fact<'service'> | Fact<'assigned'>, now: number): Write {
  const { node, service, volume } = v.value;
  const { releasing: _, ...rest } = v.value;
  const d = decide({
    kind: 'service',
    subject: service,
    controller: STORAGE_CONTROLLER,
    action: `volume ${volume} on ${node} in use again: no longer released`,
    tag: `storage-restore-${node}-${volume}`,
    at: now,
    evidence: [evidenceOf(v), evidenceOf(cause)],
    cause: causedByFact(cause),
    reasons: ['volumes' in cause.value ? `${service} declares volume ${volume} again` : `replica ${cause.value.replica} on ${node} mounts it`],
  });
  return { compares: [unchanged(v), unchanged(cause), ...d.compares], ops: [putFact('volume', [node, service, volume], { ...rest, kept: false }), ...d.ops] };
}
