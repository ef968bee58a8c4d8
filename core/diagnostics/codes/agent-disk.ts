import type { DiagnosticDef } from '../types.js';

/**
 * CCA-E0570..E0579: the node agent on a full disk (docs/agent.md, "A full disk"): the
 * condition a node reports while its state directory cannot take writes, which keeps new
 * placements away from it. One module of its own, so it merges without touching the other
 * agent codes.
 */
export const agentDiskCodes = [
  {
    code: 'CCA-E0570',
    blame: 'environment',
    title: 'node disk full',
    cause: 'node {node} cannot write to its state directory {dir}: {reason}. Its workloads keep running (the fence deadline is written in place and needs no free space), but it takes no new placements while this holds, and output the workloads write meanwhile may be lost',
    fix: 'free space on the filesystem of {dir} (`df {dir}`; large files under {dir}/replicas/*/ are workload output, capped by --log-max-bytes, --log-files and --log-max-total); the condition clears by itself within seconds once writes work and at least --disk-min-free is free',
  },
] as const satisfies readonly DiagnosticDef[];
