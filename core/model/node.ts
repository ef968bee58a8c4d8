import { z } from 'zod';
import { taintPattern } from './constraints.js';
import { LIMITS } from './defaults.js';
import { labelKeyPattern, nodeNamePattern } from './names.js';

/**
 * What an agent declares when it registers (`/nodes/<node>`, on the agent's lease). Small
 * on purpose: capacity, where it is, what it offers (labels, images) and what it repels (taints).
 */
export const nodeRecordSchema = z.object({
  name: z.string().max(253).regex(nodeNamePattern, 'must be a hostname-like name: lowercase letters, digits, dots and dashes'),
  /** Where replicas on this node can be reached (host networking by default). */
  address: z.string().max(255).default(''),
  zone: z.string().min(1).max(63).default('default'),
  labels: z.record(z.string().regex(labelKeyPattern), z.string().max(63)).default({}),
  /** "key" or "key=value"; only services that accept them are placed here. */
  taints: z.array(z.string().regex(taintPattern)).max(64).default([]),
  capacity: z.object({
    cpuMillis: z.int().min(1).max(LIMITS.cpuMillis),
    memoryBytes: z.int().min(1).max(LIMITS.memoryBytes),
  }),
  /** The node's image catalogue: image reference → digest (see the agent issue). */
  images: z.record(z.string(), z.string()).default({}),
  /** The runtime the agent drives: fake, process or containerd. */
  runtime: z.string().max(32).default('fake'),
  agentVersion: z.string().max(64).default(''),
});

export type NodeRecord = z.output<typeof nodeRecordSchema>;
export type NodeRecordInput = z.input<typeof nodeRecordSchema>;

/** Is the image in the catalogue of at least one node? Matches by exact reference. */
export function imageInCatalogue(image: string, nodes: readonly Pick<NodeRecord, 'images'>[]): boolean {
  return nodes.some((n) => Object.hasOwn(n.images, image));
}
