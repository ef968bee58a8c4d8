import type { DiagnosticDef } from '../types.js';

/**
 * Rolling updates (docs/rollouts.md): one module across areas, so it merges without
 * touching the other areas' lists. Numbers stay in their areas' ranges: E03xx spec,
 * E04xx controllers, E07xx CLI.
 */
export const rolloutCodes = [
  {
    code: 'CCA-E0318',
    blame: 'user',
    title: 'rolling update cannot move',
    cause: 'service {service} allows max_surge = {surge} and max_unavailable = {unavailable}: a rolling update could neither add a new replica nor stop an old one',
    fix: 'allow at least one of them, e.g. update { max_surge = 1 max_unavailable = 0 } (the default)',
  },
  {
    code: 'CCA-E0410',
    blame: 'user',
    title: 'rolling update stuck',
    cause: 'the rolling update of service {service} to revision {revision} made no progress for {deadline}: {reason}',
    fix: 'the roll is paused and the old replicas keep serving; fix the new version and apply it, or apply the previous spec to roll back (`cca why service {service}`, `cca get replicas --service {service} -o wide`)',
  },
  {
    code: 'CCA-E0719',
    blame: 'user',
    title: 'apply waited on a stuck rollout',
    cause: 'service {service} did not converge: rollout stuck: {reason}',
    fix: 'fix the new version and apply it again, or apply the previous spec to roll back; `cca get services` shows the roll',
  },
] as const satisfies readonly DiagnosticDef[];
