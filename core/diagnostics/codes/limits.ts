import type { DiagnosticDef } from '../types.js';

/**
 * Limits (issue 20, docs/limits.md): one module across areas, so it merges without touching
 * the other areas' lists. E033x: a spec or an apply over a size limit; E0450: a controller
 * write that the store still refuses; E0451: a node's replica cap.
 */
export const limitCodes = [
  {
    code: 'CCA-E0330',
    blame: 'user',
    title: 'spec field too long',
    cause: 'a {what} is {size} characters; the limit is {limit}',
    fix: 'shorten it, or keep large data outside the spec (in the image, or on a volume) and refer to it',
  },
  {
    code: 'CCA-E0331',
    blame: 'user',
    title: 'service spec too large',
    cause: 'service {service} is {bytes} bytes as JSON; the limit for one service is {limit} bytes',
    fix: 'move large config files and environment values into the image or a volume (docs/limits.md)',
  },
  {
    code: 'CCA-E0332',
    blame: 'user',
    title: 'too many services in one apply',
    cause: 'this apply writes {count} services; one apply writes at most {limit}',
    fix: 'apply the services in several smaller sets',
  },
  {
    code: 'CCA-E0333',
    blame: 'user',
    title: 'apply too large',
    cause: 'the services this apply writes are {bytes} bytes as stored; one apply writes at most {limit} bytes',
    fix: 'apply the services in several smaller sets (docs/limits.md)',
  },
  {
    code: 'CCA-E0450',
    blame: 'bug',
    title: 'controller write refused',
    cause: 'the {controller} could not write for {subject}: {reason}; its other subjects went on, and this one is retried with backoff',
    fix: 'report this with `cca bundle`: every value a controller writes should fit the store (docs/limits.md)',
  },
  {
    code: 'CCA-E0451',
    blame: 'user',
    title: 'nodes hold as many replicas as they allow',
    cause: 'replica {replica} of service {service} cannot go to {count} node(s) that hold as many replicas as they allow (`cca get nodes` shows replicas held/cap)',
    fix: 'add nodes, lower the replicas of other services, or register the node with a larger `cca agent --max-replicas` (at most 1000; docs/limits.md)',
  },
] as const satisfies readonly DiagnosticDef[];
