/**
 * The node agent's core: every decision the agent makes, with no I/O of its own and no Node
 * builtins (the browser console's simulation imports it). agent/agent.ts wraps it with
 * timers, HTTP, files and real runtimes; jobs/sim/agent.ts with the simulation's store,
 * clock and fake runtime. docs/agent.md describes the split.
 */
export { AgentCore, POLL_BACKOFF, type AgentCoreOptions } from './agent-core.js';
export { Refusal, ServerError, UnreachableError } from './errors.js';
export { deadlines, FENCE, FenceClock } from './fence.js';
export { DesiredCache } from './desired.js';
export { Enrollment, ENROLL_BACKOFF, reenrollDelayMs, type EnrollmentDeps } from './enrollment.js';
export { AGENT_VERSION, LeaseKeeper } from './lease.js';
export { NEVER_CONFIRMS, type AgentClock, type AgentDisk, type AgentLog, type AssignmentsAnswer, type CachedDesired, type ControlPlane, type LeaseState, type LocalVolumes, type MembershipCopyView, type ObservedVolume, type OutageOracle, type Prober, type Registration, type VolumeInfo, type Workspace } from './ports.js';
export { cannotReach, OutageLatch, quorumVerdict, type QuorumInput, type QuorumVerdict, type VerifiedAnswer } from './quorum.js';
