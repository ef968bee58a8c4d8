import { z } from 'zod';
import { DEFAULTS } from './defaults.js';

/**
 * Placement constraints over node attributes. `zone` and `node` (the node's name) are
 * single-valued; `label.KEY` is the value of a node label, absent when the node lacks it.
 */
export const constraintAttributeSchema = z
  .string()
  .regex(/^(zone|node|label\..+)$/, 'must be zone, node or label.KEY');

export const constraintOps = ['==', '!=', 'in', 'not in'] as const;
export type ConstraintOp = (typeof constraintOps)[number];

export const constraintSchema = z.strictObject({
  attribute: constraintAttributeSchema,
  op: z.enum(constraintOps),
  /** One value for == and !=, one or more for in / not in. */
  values: z.array(z.string()).min(1).max(256),
});
export type Constraint = z.infer<typeof constraintSchema>;

export const preferenceSchema = z.strictObject({
  constraint: constraintSchema,
  weight: z.int().min(1).max(100).default(DEFAULTS.preferWeight),
});
export type Preference = z.output<typeof preferenceSchema>;

/** What the scheduler can know about a node when matching constraints. */
export interface NodeAttributes {
  name: string;
  zone: string;
  labels: Readonly<Record<string, string>>;
  taints?: readonly string[];
}

export function attributeValue(node: NodeAttributes, attribute: string): string | undefined {
  if (attribute === 'zone') return node.zone;
  if (attribute === 'node') return node.name;
  if (attribute.startsWith('label.')) {
    const key = attribute.slice('label.'.length);
    return Object.hasOwn(node.labels, key) ? node.labels[key] : undefined;
  }
  return undefined;
}

/** Does the node satisfy the constraint? A missing label never equals anything and is never `in` a set. */
export function matchesConstraint(c: Constraint, node: NodeAttributes): boolean {
  const v = attributeValue(node, c.attribute);
  const inSet = v !== undefined && c.values.includes(v);
  return c.op === '==' || c.op === 'in' ? inSet : !inSet;
}

/** Human text for decisions and docs: `zone in ["a", "b"]`. */
export function constraintText(c: Constraint): string {
  const value = c.op === 'in' || c.op === 'not in' ? `[${c.values.map((v) => JSON.stringify(v)).join(', ')}]` : JSON.stringify(c.values[0]);
  return `${c.attribute} ${c.op} ${value}`;
}

/**
 * Taints are `key` or `key=value`. A service's `accept "key"` tolerates any taint with that
 * key; `accept "key=value"` tolerates exactly that one.
 */
export function taintKey(taint: string): string {
  const eq = taint.indexOf('=');
  return eq < 0 ? taint : taint.slice(0, eq);
}

export function tolerates(accepts: readonly string[], taint: string): boolean {
  return accepts.some((a) => a === taint || (!a.includes('=') && a === taintKey(taint)));
}

/** The taints of `node` that the service does not accept; empty means the node may take it. */
export function untoleratedTaints(accepts: readonly string[], taints: readonly string[]): string[] {
  return taints.filter((t) => !tolerates(accepts, t));
}

export const taintPattern = /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?(=[-A-Za-z0-9_.]*)?$/;
