import { ROLLOUT_FIELDS } from './resolve.js';
import { secretIdentity } from './sealed.js';
import type { ServiceSpec } from './service.js';

/**
 * A replica's template: the fields of a spec a replica is made from (`ROLLOUT_FIELDS`:
 * image, command, args, env, workdir, resources, ports, health, init, configs, secrets,
 * volumes, stop grace, restart). Two specs with the same template run the same replicas;
 * a changed template rolls the service. Every other field (replicas, update, autoscale,
 * placement, labels, after, network) changes bookkeeping only.
 */
export type TemplateFields = Pick<ServiceSpec, (typeof ROLLOUT_FIELDS)[number]>;

/** JSON with object keys sorted at every level, so equal values give equal text whatever their key order. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The template's canonical text (every rollout field, `null` for an absent optional one). */
export function templateText(spec: TemplateFields): string {
  // A sealed secret is named by its value id: re-sealing under a new key changes no template.
  const secrets = spec.secrets.map((s) => ({ ...s, value: secretIdentity(s.value) }));
  const fields: TemplateFields = { ...spec, secrets };
  return canonicalJson(Object.fromEntries(ROLLOUT_FIELDS.map((f) => [f, fields[f] ?? null])));
}

/**
 * A stable 64-bit digest of the template as 16 hex digits: two independent 32-bit hashes
 * (FNV-1a and a Murmur3-style mix with another seed) over the canonical text. Pure and
 * browser-safe (no node:crypto); a collision between two templates of one service would
 * make a changed spec not roll, so 32 bits alone were not enough.
 */
export function templateHash(spec: TemplateFields): string {
  // A frozen spec (a decoded fact: jobs/decode-memo.ts) cannot change: its hash is kept with
  // it. A roll compares every old replica's assignment with the target on every step.
  if (!Object.isFrozen(spec)) return hashOf(templateText(spec));
  let h = frozenHashes.get(spec);
  if (h === undefined) frozenHashes.set(spec, (h = hashOf(templateText(spec))));
  return h;
}

const frozenHashes = new WeakMap<TemplateFields, string>();

function hashOf(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  a ^= text.length;
  b ^= text.length;
  b = Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  b ^= b >>> 16;
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/**
 * Does a replica run the template `target`? Its recorded template says so when it matches
 * (the scheduler places a replica only with a spec of its recorded template, so the fast
 * path is exact); otherwise the spec its assignment carries decides, hashed with today's
 * schema, so a newer server's added defaults are not mistaken for a change. An unplaced
 * replica from before templates were recorded ('') will be placed with the current spec.
 */
export function runsTemplate(recorded: string, placedSpec: TemplateFields | undefined, target: string): boolean {
  if (recorded === target) return true;
  if (placedSpec) return templateHash(placedSpec) === target;
  return recorded === '';
}
