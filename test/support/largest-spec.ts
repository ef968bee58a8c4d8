import { SPEC_LIMITS, specBytes } from '../../core/model/spec-limits.js';
import { serviceSpecSchema, type ServiceSpecInput } from '../../core/model/service.js';

/**
 * The largest spec the model accepts, exactly SPEC_LIMITS.serviceBytes as JSON, shaped for the
 * worst stored size: its bulk is 64 secrets (sealing makes a secret a third longer), with two
 * volumes. Small resources, so many replicas fit one node.
 */
export function largestSpec(name: string, replicas: number, extra = 0): ServiceSpecInput {
  const n = SPEC_LIMITS.secrets;
  const at = (fill: number[]): ServiceSpecInput => ({
    name,
    image: 'web:1',
    replicas,
    command: ['httpd'],
    env: { MODE: 'large' },
    resources: { cpuMillis: 10, memoryBytes: 1024 * 1024 },
    volumes: [
      { name: 'data', sizeBytes: 1024 * 1024, mountPath: '/data' },
      { name: 'logs', sizeBytes: 1024 * 1024, mountPath: '/logs' },
    ],
    secrets: fill.map((len, i) => ({ name: `s${i}`, value: 'x'.repeat(len), env: `S${i}` })),
  });
  const base = specBytes(serviceSpecSchema.parse(at(Array.from({ length: n }, () => 1))));
  const room = SPEC_LIMITS.serviceBytes - base + extra;
  const fill = Array.from({ length: n }, (_, i) => 1 + Math.floor(room / n) + (i < room % n ? 1 : 0));
  return at(fill);
}
