import type { DiagnosticDef } from '../types.js';

/** CCA-E05xx: the node agent and its runtimes. */
export const agentCodes = [
  {
    code: 'CCA-E0501',
    blame: 'user',
    title: 'image not in the node catalogue',
    cause: 'service {service} asks for image {image}, which node {node} does not have (its catalogue: {known})',
    fix: 'use an image from the catalogue, or build and import it (`npm run images`; see docs/agent.md "Your own images"); the replica is held, not retried',
  },
  {
    code: 'CCA-E0502',
    blame: 'environment',
    title: 'workload supervisor vanished',
    cause: 'the supervisor of replica {replica} (pid {pid}) is gone without recording an exit; the workload was lost and its process group killed',
    fix: 'check the node for an OOM killer or an operator killing processes (`dmesg`); the control plane replaces the replica',
  },
  {
    code: 'CCA-E0503',
    blame: 'environment',
    title: 'workload missing from the runtime',
    cause: 'replica {replica} was recorded as started in the state directory but the {runtime} runtime no longer has it',
    fix: 'something removed the workload behind the agent (a reboot, `ctr task rm`); the control plane replaces the replica',
  },
  {
    code: 'CCA-E0504',
    blame: 'environment',
    title: 'workload failed to start',
    cause: 'the {runtime} runtime could not start replica {replica}: {reason}',
    fix: 'check the command exists in the image and the runtime is healthy; the agent reports the failure and the control plane decides on a replacement',
  },
  {
    code: 'CCA-E0505',
    blame: 'external',
    title: 'server unreachable',
    cause: 'the agent cannot reach the server at {url}: {reason}',
    fix: 'check the server is up and reachable from this node; workloads keep running until the fencing deadline and the agent keeps retrying',
  },
  {
    code: 'CCA-E0506',
    blame: 'environment',
    title: 'workloads fenced',
    cause: 'node {node} has not renewed its lease for {sinceMs} ms; its workloads were stopped {marginMs} ms before the lease could expire',
    fix: 'restore connectivity between the node and the server; the agent registers again and the control plane places replicas afresh',
  },
  {
    code: 'CCA-E0507',
    blame: 'environment',
    title: 'containerd unavailable',
    cause: 'the containerd runtime cannot be used: {reason}',
    fix: 'install containerd, runc and tini (`apt-get install containerd runc tini`), or let the agent start its own with --containerd-start',
  },
  {
    code: 'CCA-E0508',
    blame: 'user',
    title: 'invalid agent configuration',
    cause: 'the agent was started with an invalid setting: {reason}',
    fix: 'run `cca agent --help` for the flags; docs/agent.md shows a config file',
  },
  {
    code: 'CCA-E0509',
    blame: 'user',
    title: 'agent credential rejected',
    cause: 'the server refused the agent of node {node}: {reason}',
    fix: 'pass a valid join token with --token (a fresh one re-enrolls the node), or remove the stale credential from the state directory',
  },
  {
    code: 'CCA-E0510',
    blame: 'environment',
    title: 'image build failed',
    cause: 'building image {image} failed: {reason}',
    fix: 'install the tools it needs (`apt-get install umoci busybox-static tini containerd`) and run `npm run images` again',
  },
  {
    code: 'CCA-E0511',
    blame: 'user',
    title: 'workload out of memory',
    cause: 'replica {replica} of service {service} was killed by the kernel for exceeding its memory limit of {memoryBytes} bytes',
    fix: 'raise `memory` in the service spec, or find what makes the workload grow',
  },
  {
    code: 'CCA-E0512',
    blame: 'environment',
    title: 'state directory unusable',
    cause: 'the agent cannot use its state directory {dir}: {reason}',
    fix: 'give the agent a writable directory on a local disk with --state-dir',
  },
] as const satisfies readonly DiagnosticDef[];
