import type { DiagnosticDef } from '../types.js';

/** CCA-E04xx: controllers, the scheduler, decisions and the simulation. */
export const controllerCodes = [
  {
    code: 'CCA-E0401',
    blame: 'user',
    title: 'replica cannot be placed',
    cause: 'replica {replica} of service {service} fits on no node: {shortfall}',
    fix: 'add nodes or capacity, or relax the placement rules of {service}; it is placed as soon as a node fits (`cca why replica {replica}`)',
  },
  {
    code: 'CCA-E0402',
    blame: 'bug',
    title: 'allocation record disagrees with assignments',
    cause: 'the allocation of node {node} records {recorded}, but its assignments at revision {revision} add up to {expected}',
    fix: 'node {node} takes no new placements until an operator asks the scheduler to repair it (`cca repair node {node}`); report this with `cca bundle`',
  },
  {
    code: 'CCA-E0403',
    blame: 'environment',
    title: 'controllers cannot reach the store',
    cause: 'controller steps are failing because the store is unavailable: {reason}',
    fix: 'check that the store is running and reachable; steps back off and resume on their own, and agents keep running their workloads meanwhile',
  },
  {
    code: 'CCA-E0404',
    blame: 'bug',
    title: 'controller step failed',
    cause: 'the {controller} step failed unexpectedly: {reason}',
    fix: 'report this with `cca bundle`; the step wrote nothing and is retried with backoff',
  },
  {
    code: 'CCA-E0405',
    blame: 'bug',
    title: 'simulation invariant violated',
    cause: 'invariant {invariant} failed at t={at} ms (seed {seed}): {detail}',
    fix: 'replay it with `npm run sim -- --seed {seed} --trace` and report the trace',
  },
  {
    code: 'CCA-E0406',
    blame: 'user',
    title: 'no decisions about this subject',
    cause: 'there is no decision about {kind} {name}',
    fix: 'check the name (`cca get {kind}s`); decisions about subjects gone longer than the retention period are evicted',
  },
  {
    code: 'CCA-E0423',
    blame: 'user',
    title: 'policy port not declared by the running replica',
    cause: 'the policy of service {service} allows port `{port}`, which replica {replica} does not declare (it runs an older spec)',
    fix: 'nothing reaches that port of the replica until it is replaced by one whose spec declares the port; roll the service or name a port it declares',
  },
  {
    code: 'CCA-E0419',
    blame: 'environment',
    title: 'stateful replica waits for a fencing proof',
    cause: 'replica {replica} of service {service} has a volume and node {node} lost tenure {tenure}; a lease expiry alone does not prove it stopped',
    fix: 'bring node {node} back (its agent confirms the stop), or if the machine is down for good assert it with `cca fence node {node} --confirm`',
  },
  {
    code: 'CCA-E0420',
    blame: 'environment',
    title: 'replica waits for the node holding its volume',
    cause: 'replica {replica} of service {service} needs volume {volume}, held on {nodes}: {shortfall}',
    fix: 'free capacity on {nodes}, or delete the volume there (remove it from the spec) to let the replica start elsewhere with an empty one',
  },
  {
    code: 'CCA-E0416',
    blame: 'user',
    title: 'replica backing off after a failure',
    cause: 'replica {replica} of service {service} replaces one that failed ({failure}, {attempt} in a row); it is placed no earlier than {delay} after that failure',
    fix: 'see what failed with `cca why replica {replica}` and fix the command or init step; the delay doubles per consecutive failure (1 s up to 5 min) and resets after 10 min placed',
  },
  {
    code: 'CCA-E0417',
    blame: 'user',
    title: 'waiting for a dependency',
    cause: 'replica {replica} of service {service} starts after {dependency}, which has {ready}/{desired} replicas ready',
    fix: 'see why {dependency} is not ready (`cca get services {dependency}`, `cca why service {dependency}`); {service} is placed once it is',
  },
  {
    code: 'CCA-E0418',
    blame: 'user',
    title: 'dependency not defined',
    cause: 'replica {replica} of service {service} starts after {dependency}, but no service {dependency} exists (it was deleted)',
    fix: 'apply {dependency} again, or remove it from the `after` list of {service}',
  },
] as const satisfies readonly DiagnosticDef[];
