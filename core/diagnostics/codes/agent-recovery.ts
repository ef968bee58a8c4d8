import type { DiagnosticDef } from '../types.js';

/**
 * CCA-E0590..E0599: how the node agent survives outages of its own state (docs/agent.md,
 * "Recovery"): a credential the server no longer knows, a cached desired state it cannot
 * read, a state file it cannot write. One module of its own, so it merges without touching
 * the other agent codes.
 */
export const agentRecoveryCodes = [
  {
    code: 'CCA-E0590',
    blame: 'environment',
    title: 'node credential refused: enrolling again',
    cause: 'the server refused the credential of node {node} ({reason}; seen on {call}): an admin ran `cca node reset {node}`, or the store was restored from a backup taken before the credential was issued. The agent keeps running its workloads (fenced only as its lease runs out) and enrolls again with its join token: refusal {attempt} in a row, next enrollment in {delayMs} ms',
    fix: 'nothing, if the next log line says "enrolled": the agent registers again, resuming its lease (or getting a new tenure) and keeps what still is assigned to it. If the enrollment is refused (CCA-E0591), give the agent a valid join token (--token-file) or, if another machine took the name, reset it only when this machine is the node',
  },
  {
    code: 'CCA-E0591',
    blame: 'user',
    title: 'enrollment refused',
    cause: 'node {node} cannot enroll: the server answered {serverCode} ({reason}). The agent keeps running what it has (fenced as its lease runs out) and tries again in {delayMs} ms, backing off up to {maxMs} ms',
    fix: 'for an expired, used-up, revoked or unknown join token: create one (`cca token create --role join --uses 1 --expires 1h`) and put it in the agent\'s --token-file (it is read at start: restart the agent). For CCA-E0630 (the node still has a credential): if this machine is node {node} and lost its credential, an admin runs `cca node reset {node}`; the agent then enrolls by itself',
  },
  {
    code: 'CCA-E0592',
    blame: 'environment',
    title: 'cached desired state unreadable',
    cause: 'the agent cannot read its cached desired state {file}: {reason}. It keeps every workload the runtime holds running (fenced only as its lease runs out) and waits for the server\'s assignments, which replace the cache; the file was kept as {kept}',
    fix: 'nothing to keep the workloads running. If it repeats, check the disk and filesystem of the state directory (`dmesg`, free space) and look at {kept}; a few such copies are kept, the oldest removed',
  },
  {
    code: 'CCA-E0593',
    blame: 'environment',
    title: 'cached desired state from another agent version',
    cause: 'the cached desired state {file} was written in a form this agent does not read: {reason}. Workloads the runtime holds keep running (fenced only as the lease runs out) until the server\'s assignments arrive and replace the cache; the file was kept as {kept}',
    fix: 'nothing to keep the workloads running: the server\'s assignments replace the cache. It happens after an agent was downgraded or upgraded across a change of the file; run the same agent version as the server on every node',
  },
  {
    code: 'CCA-E0594',
    blame: 'environment',
    title: 'agent state file not written',
    cause: 'the agent could not write {file}: {reason}. It keeps working from what it holds in memory and writes the file again at the next change; until then {risk}',
    fix: 'free space on (or give the agent write access to) its state directory {dir}; the agent needs no restart, and should not be restarted until the file is written again',
  },
] as const satisfies readonly DiagnosticDef[];
