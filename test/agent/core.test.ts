import { describe, expect, it } from 'vitest';
import { AgentCore, FENCE, OutageLatch, ServerError, UnreachableError, type AgentDisk, type CachedDesired, type ControlPlane, type LeaseState, type OutageOracle } from '../../agent/core/index.js';
import { DISK } from '../../agent/core/disk.js';
import type { DiskHealth } from '../../agent/core/ports.js';
import { FakeRuntime } from '../../agent/core/fake-runtime.js';
import { makeDiagnostic } from '../../core/diagnostics/index.js';
import { assignmentSchema, serviceSpecSchema, type Assignment, type NodeEvent, type NodeRecordInput, type Observation } from '../../core/model/index.js';

/**
 * The agent's core driven by hand: a control plane that answers from memory (or fails as
 * told), a manual clock, the fake runtime on that clock. No timers, no sockets: each test
 * steps the core through the instants that matter.
 */
const WALL = 1_700_000_000_000;
const TTL = 10;

class FakeControlPlane implements ControlPlane {
  /** What the assignments answer carries as the membership (docs/fencing.md); absent when undefined. */
  membership: unknown;
  enrolled = true;
  /** Bumped with every change of credential, as the HTTP client does. */
  generation = 1;
  enrollments = 0;
  /** How calls fail: not at all, no answer, or the server's store is down. */
  failing: 'no' | 'unreachable' | 'store-down' = 'no';
  leaseGone = false;
  tenure = 7;
  assigned: Assignment[] = [];
  revision = 1;
  readonly reports: Observation[][] = [];
  readonly sentEvents: NodeEvent[] = [];
  /** The answer to the next report (observations or events), once. */
  refuseReport: ServerError | undefined;

  private gate(): void {
    if (this.failing === 'unreachable') throw new UnreachableError('http://cp', 'ECONNREFUSED');
    if (this.failing === 'store-down') throw new ServerError(503, makeDiagnostic('CCA-E0111', { reason: 'down' }));
  }
  async enroll(): Promise<void> {
    this.gate();
    this.enrolled = true;
    this.generation++;
    this.enrollments++;
  }
  forgetCredential(): void {
    this.enrolled = false;
    this.generation++;
  }
  /** A 401 as the server answers a call made with credential `generation`. */
  refusal(generation = this.generation): ServerError {
    return new ServerError(401, makeDiagnostic('CCA-E0605', { needs: 'a node credential', got: 'no valid token' }), generation);
  }
  /** Every record registered, in order (a condition update registers again). */
  readonly records: NodeRecordInput[] = [];
  async register(record: NodeRecordInput): Promise<{ lease: number; ttl: number; tenure: number; revision: number }> {
    this.gate();
    this.records.push(record);
    this.leaseGone = false;
    return { lease: 1, ttl: TTL, tenure: this.tenure, revision: this.revision };
  }
  async keepalive(): Promise<{ ttl: number }> {
    this.gate();
    if (this.leaseGone) throw new ServerError(404, makeDiagnostic('CCA-E0107', { lease: 1 }));
    return { ttl: TTL };
  }
  /** What `changed` says in an assignments answer (the list is the whole list either way). */
  answersChanged = true;
  async assignments(): Promise<{ revision: number; changed: boolean; assignments: Assignment[] }> {
    this.gate();
    return { revision: this.revision, changed: this.answersChanged, assignments: this.assigned, ...(this.membership === undefined ? {} : { membership: this.membership }) };
  }
  async observations(_tenure: number, observations: Observation[]): Promise<void> {
    this.gate();
    const refusal = this.refuseReport;
    this.refuseReport = undefined;
    if (refusal) throw refusal;
    this.reports.push(observations);
  }
  async events(_tenure: number, events: NodeEvent[]): Promise<void> {
    this.gate();
    const refusal = this.refuseReport;
    this.refuseReport = undefined;
    if (refusal) throw refusal;
    this.sentEvents.push(...events);
  }
  async volumes(): Promise<never[]> {
    this.gate();
    return [];
  }
  async observedVolumes(): Promise<void> {
    this.gate();
  }
}

class MemoryDisk implements AgentDisk {
  saved: LeaseState | undefined;
  fence: number | undefined;
  lease(): LeaseState | undefined {
    return this.saved;
  }
  saveLease(l: LeaseState | undefined): void {
    this.saved = l;
  }
  fenceAt(): number | undefined {
    return this.fence;
  }
  saveFenceAt(at: number, supervisorsAt = at): void {
    this.fence = at;
    this.runUntil = supervisorsAt;
  }
  /** The supervisors' deadline (later than the fence point while an outage is confirmed). */
  runUntil: number | undefined;
  supervisorDeadline(): number | undefined {
    return this.runUntil;
  }
  saveRunUntil(at: number): void {
    this.runUntil = at;
  }
  cached: CachedDesired = { revision: 0, assignments: [], unknown: 'all' };
  readonly reported: string[] = [];
  desired(): CachedDesired {
    return this.cached;
  }
  saveDesired(revision: number, assignments: Assignment[]): void {
    this.cached = { revision, assignments, unknown: new Set() };
  }
  onReport = (line: string): void => void this.reported.push(line);
  /** How the disk says it is (AgentDisk.health): roomy unless a test fills it. */
  healthNow: DiskHealth = { dir: '/state', noSpace: [], freeBytes: 10 * 2 ** 30 };
  health(): DiskHealth {
    return this.healthNow;
  }
}

const spec = serviceSpecSchema.parse({ name: 'web', image: 'web:1', stopGraceMs: 10_000 });
const assign = (replica: string, tenure = 7): Assignment => assignmentSchema.parse({ replica, service: 'web', node: 'n1', tenure, resources: spec.resources, specRevision: 1, spec, placedAt: 0 });

function harness(outage?: OutageOracle) {
  let t = 0;
  const clock = { mono: () => t, wall: () => WALL + t };
  const control = new FakeControlPlane();
  const disk = new MemoryDisk();
  const runtime = new FakeRuntime({ catalogue: { 'web:1': 'sha256:web1' }, now: clock.wall, manualTime: true });
  const stops: { replica: string; graceMs: number }[] = [];
  const stop = runtime.stop.bind(runtime);
  runtime.stop = async (h, graceMs) => {
    stops.push({ replica: h.replica, graceMs });
    return stop(h, graceMs);
  };
  const logs: string[] = [];
  const core = new AgentCore({
    node: 'n1',
    record: { zone: 'a', labels: {}, taints: [], capacity: { cpuMillis: 1000, memoryBytes: 2 ** 30 } },
    leaseTtlSeconds: TTL,
    clock,
    random: () => 0.5,
    control,
    runtime,
    disk,
    workspace: { prepare: (a) => ({ dir: `/x/${a.replica}`, files: [], env: {}, volumes: [] }) },
    volumes: { ensure: () => undefined, remove: () => undefined, list: () => [] },
    prober: { probe: async () => true },
    ...(outage ? { outage } : {}),
    log: (l) => logs.push(l),
  });
  /** Move the clock to `at`, run one tick, and let everything it started finish. */
  const at = async (ms: number) => {
    t = ms;
    await core.tick();
    await core.idle();
    runtime.advance();
    await core.idle();
  };
  return { core, control, disk, runtime, stops, logs, at, setTime: (ms: number) => (t = ms) };
}

/** Registered at t=0 under tenure 7, running web-1. */
async function running(outage?: OutageOracle) {
  const h = harness(outage);
  await h.core.start();
  expect(await h.core.leaseStep()).toBe((TTL * 1000) / FENCE.keepalivesPerTtl);
  h.control.assigned = [assign('web-1')];
  expect(await h.core.poll(0, 0)).toBe(1);
  await h.at(0);
  expect(h.runtime.running()).toEqual(['web-1']);
  return h;
}

describe('the agent core, through a fake control plane', () => {
  it('a new list in an answer that says unchanged is still the list: the placement committed as the long poll ended runs', async () => {
    const h = await running();
    // The server's long poll saw nothing and timed out; the scheduler committed web-2 before
    // the route read the list: the answer holds web-2 with changed: false, at a revision past it.
    h.control.assigned = [assign('web-1'), assign('web-2')];
    h.control.answersChanged = false;
    await h.core.poll(1, 0);
    await h.at(0);
    expect(h.runtime.running()).toEqual(['web-1', 'web-2']);
    // The same list again, unchanged: nothing new to do, and nothing stops.
    await h.core.poll(1, 0);
    await h.at(0);
    expect(h.runtime.running()).toEqual(['web-1', 'web-2']);
    // A removal the flag misses the same way stops the replica.
    h.control.assigned = [assign('web-2')];
    await h.core.poll(1, 0);
    await h.at(0);
    expect(h.runtime.running()).toEqual(['web-2']);
  });

  it('keepalives failing: keeps running until the fence point (sent + ttl − margin), fences exactly then', async () => {
    const h = await running();
    const fenceAt = TTL * 1000 - FENCE.marginMs;
    // The supervisors get the same deadline, as wall time.
    expect(h.disk.fence).toBe(WALL + fenceAt);
    h.control.failing = 'unreachable';
    for (const t of [2_500, 5_000]) {
      h.setTime(t);
      expect(await h.core.leaseStep()).toBe(FENCE.keepaliveRetryMs);
    }
    await h.at(fenceAt - 1);
    expect(h.runtime.running()).toEqual(['web-1']);
    expect(h.core.status().fenced).toBe(false);
    await h.at(fenceAt);
    expect(h.core.status().fenced).toBe(true);
    expect(h.stops).toEqual([{ replica: 'web-1', graceMs: FENCE.killMs }]);
    expect(h.runtime.running()).toEqual([]);
  });

  it('a store outage answered by the server renews the fence clock: no fence while the server says so', async () => {
    const h = await running();
    h.control.failing = 'store-down';
    for (let t = 500; t <= 20_000; t += 500) {
      h.setTime(t);
      await h.core.leaseStep();
      await h.at(t);
    }
    expect(h.stops).toEqual([]);
    expect(h.runtime.running()).toEqual(['web-1']);
  });

  it("store-down answers move the fence by the span seen down, never by a whole TTL (the lease may have had little left)", async () => {
    const h = await running();
    h.control.failing = 'unreachable';
    for (const t of [2_500, 3_000, 4_000]) {
      h.setTime(t);
      await h.core.leaseStep();
    }
    // The store goes down and the server says so from 5 s to 6 s; then the node is cut off again.
    h.control.failing = 'store-down';
    for (const t of [5_000, 5_500, 6_000]) {
      h.setTime(t);
      await h.core.leaseStep();
    }
    h.control.failing = 'unreachable';
    const fenceAt = TTL * 1000 - FENCE.marginMs + 1_000;
    expect(h.disk.fence).toBe(WALL + fenceAt);
    await h.at(fenceAt - 1);
    expect(h.runtime.running()).toEqual(['web-1']);
    await h.at(fenceAt);
    expect(h.runtime.running()).toEqual([]);
  });

  it('an outage oracle that confirms the control plane is down keeps workloads running past the fence point', async () => {
    let confirms = true;
    const asked: number[] = [];
    const h = await running({
      confirmsOutage: (now) => {
        asked.push(now);
        return confirms;
      },
    });
    h.control.failing = 'unreachable';
    const fenceAt = TTL * 1000 - FENCE.marginMs;
    await h.at(fenceAt + 5_000);
    expect(h.core.status().fenced).toBe(false);
    expect(h.runtime.running()).toEqual(['web-1']);
    expect(asked).toContain(fenceAt + 5_000);
    // Once it stops confirming, the overdue fence happens on the next pass.
    confirms = false;
    await h.at(fenceAt + 5_200);
    expect(h.core.status().fenced).toBe(true);
    expect(h.runtime.running()).toEqual([]);
  });

  it('the quorum rule through the core: the membership reaches the oracle, the supervisors\' deadline follows a confirmed outage and comes back', async () => {
    let fence: (() => number | undefined) | undefined;
    const latch = new OutageLatch(() => fence?.());
    const learned: [unknown, number][] = [];
    const h = await running({
      confirmsOutage: (now) => latch.confirmsOutage(now),
      runsUntil: (now) => latch.runsUntil(now),
      resume: (from, until) => latch.resume(from, until),
      learned: (m, sentAt) => void learned.push([m, sentAt]),
    });
    fence = () => h.core.leases.fence.fenceAt();
    // The membership comes with an assignments answer, with the time its request was sent.
    h.control.membership = { version: 1, since: 0, members: [] };
    h.setTime(1_000);
    await h.core.poll(1, 0);
    expect(learned).toEqual([[{ version: 1, since: 0, members: [] }, 1_000]]);
    h.control.failing = 'unreachable';
    const fenceAt = TTL * 1000 - FENCE.marginMs;
    expect(h.disk.runUntil).toBe(WALL + fenceAt);
    // Peers confirm before the fence point, then every second: the deadline moves with the chain's end (wall time).
    for (let t = fenceAt - 1_000; t <= fenceAt + 4_000; t += 1_000) {
      latch.confirmed(t, t + 3_000);
      h.setTime(t);
      h.core.outageChanged();
      expect(h.disk.runUntil).toBe(WALL + t + 3_000);
      await h.at(t);
    }
    expect(h.runtime.running()).toEqual(['web-1']);
    // The lease's own fence point is kept for a restart.
    expect(h.disk.fence).toBe(WALL + fenceAt);
    // The confirmations stop: at the chain's end the core fences and the supervisors' deadline returns to the fence point.
    await h.at(fenceAt + 7_000);
    expect(h.core.status().fenced).toBe(true);
    expect(h.runtime.running()).toEqual([]);
    expect(h.disk.runUntil).toBe(WALL + fenceAt);
  });

  it('the control plane returns with its store down during a confirmed outage: the supervisors keep the outage\'s deadline', async () => {
    let fence: (() => number | undefined) | undefined;
    const latch = new OutageLatch(() => fence?.());
    const h = await running({ confirmsOutage: (now) => latch.confirmsOutage(now), runsUntil: (now) => latch.runsUntil(now) });
    fence = () => h.core.leases.fence.fenceAt();
    h.control.failing = 'unreachable';
    const fenceAt = TTL * 1000 - FENCE.marginMs;
    for (let t = fenceAt - 1_000; t <= fenceAt + 4_000; t += 1_000) {
      latch.confirmed(t, t + 20_000);
      h.setTime(t);
      await h.core.leaseStep();
      h.core.outageChanged();
      await h.at(t);
    }
    const until = WALL + fenceAt + 24_000;
    expect(h.disk.runUntil).toBe(until);
    // A pod answers again, but its store is down (a failover, a pool out of connections): the
    // lease's fence point moves by the span seen down; the supervisors' deadline stays the outage's end.
    h.control.failing = 'store-down';
    for (const t of [fenceAt + 4_500, fenceAt + 5_000]) {
      h.setTime(t);
      await h.core.leaseStep();
      expect(h.disk.runUntil).toBe(until);
      expect(h.disk.fence).toBe(WALL + fenceAt + (t - fenceAt - 4_500));
      // The supervisors look now, before the core's next pass: nothing is past their deadline.
      h.runtime.fenceAt = h.disk.supervisorDeadline();
      expect(h.runtime.supervise(WALL + t)).toEqual([]);
    }
    // The store back: a renewal moves both to the new lease's fence point.
    h.control.failing = 'no';
    h.setTime(fenceAt + 5_500);
    await h.core.leaseStep();
    expect(h.disk.fence).toBe(WALL + fenceAt + 5_500 + fenceAt);
    expect(h.disk.runUntil).toBe(WALL + fenceAt + 5_500 + fenceAt);
    await h.at(fenceAt + 5_500);
    expect(h.runtime.running()).toEqual(['web-1']);
    expect(h.stops).toEqual([]);
  });

  it('the lease gone: stops what ran under the old tenure, registers anew, never restarts the stale assignment', async () => {
    const h = await running();
    h.control.leaseGone = true;
    h.setTime(2_500);
    await h.core.leaseStep();
    await h.at(2_500);
    expect(h.runtime.running()).toEqual([]);
    expect(h.stops).toEqual([{ replica: 'web-1', graceMs: FENCE.killMs }]);
    h.control.tenure = 9;
    await h.core.leaseStep();
    expect(h.core.status()).toMatchObject({ registered: true, tenure: 9 });
    await h.at(3_000);
    // web-1 was placed under tenure 7: it may already run elsewhere.
    expect(h.runtime.starts).toEqual(['web-1']);
    h.control.assigned = [assign('web-2', 9)];
    h.control.revision = 2;
    await h.core.poll(1, 0);
    await h.at(3_500);
    expect(h.runtime.running()).toEqual(['web-2']);
  });

  it('a report refused with 409 (our tenure is stale) drops the lease and stops the workloads', async () => {
    const h = await running();
    h.control.refuseReport = new ServerError(409, makeDiagnostic('CCA-E0107', { lease: 1 }));
    await h.at(1_000);
    expect(h.core.status().registered).toBe(false);
    expect(h.runtime.running()).toEqual([]);
  });

  it('a report refused with 409 CCA-E0611 (a write that met a concurrent change) is tried again: the tenure and the workloads stay', async () => {
    const h = await running();
    h.control.refuseReport = new ServerError(409, makeDiagnostic('CCA-E0611', { what: 'the assignments of node n1' }));
    await h.at(1_000);
    expect(h.core.status()).toMatchObject({ registered: true, tenure: 7, fenced: false });
    expect(h.runtime.running()).toEqual(['web-1']);
  });

  it('reports only changes: an unchanged replica is not re-sent, a crash is', async () => {
    const h = await running();
    await h.at(1_000);
    await h.at(2_000);
    const sent = () => h.control.reports.flat().map((o) => `${o.replica}:${o.state}`);
    const settled = sent();
    expect(settled.at(-1)).toBe('web-1:running');
    await h.at(3_000);
    await h.at(4_000);
    expect(sent()).toEqual(settled);
    h.runtime.crash('web-1', 3);
    await h.core.idle();
    await h.at(5_000);
    await h.at(6_000);
    expect(sent()).toEqual([...settled, 'web-1:failed']);
    expect(h.control.sentEvents.map((e) => e.kind)).toContain('started');
    // Not restarted by the agent: replacing it is the control plane's job.
    expect(h.runtime.starts).toEqual(['web-1']);
  });
});

describe('the agent core through its own outages (docs/agent.md, "Recovery")', () => {
  it('a 401 on the credential in hand: dropped (CCA-E0590), enrolled again, the lease resumed with the same tenure; the workload never stops', async () => {
    const h = await running();
    h.control.refuseReport = h.control.refusal();
    await h.at(1_000);
    expect(h.control.enrolled).toBe(false);
    expect(h.logs.filter((l) => l.startsWith('CCA-E0590'))).toHaveLength(1);
    await h.core.leaseStep();
    expect(h.control.enrollments).toBe(1);
    expect(h.core.status()).toMatchObject({ registered: true, tenure: 7, fenced: false });
    await h.at(2_000);
    expect(h.runtime.running()).toEqual(['web-1']);
    expect(h.stops).toEqual([]);
    expect(h.runtime.starts).toEqual(['web-1']);
  });

  it('a 401 to a call made with a credential since replaced changes nothing: the new credential stays', async () => {
    const h = await running();
    const old = h.control.generation;
    h.control.refuseReport = h.control.refusal();
    await h.at(1_000);
    await h.core.leaseStep();
    expect(h.control.enrolled).toBe(true);
    // A long poll made with the old credential comes back refused after the new one was issued.
    h.control.refuseReport = h.control.refusal(old);
    await h.at(2_000);
    expect(h.control.enrolled).toBe(true);
    expect(h.logs.filter((l) => l.startsWith('CCA-E0590'))).toHaveLength(1);
    expect(h.control.enrollments).toBe(1);
  });

  /** A restarted agent with a lease and fence deadline on disk, web-1 running in the runtime, the server unreachable. */
  async function restarted(cached: CachedDesired) {
    const h = harness();
    await h.runtime.start({ replica: 'web-1', service: 'web', spec, image: 'sha256:web1', env: {}, files: [], dir: '/x/web-1' });
    h.disk.saved = { lease: 1, tenure: 7, ttl: TTL };
    h.disk.fence = WALL + TTL * 1000 - FENCE.marginMs;
    h.disk.cached = cached;
    h.control.failing = 'unreachable';
    await h.core.start();
    for (const t of [0, 1_000, 2_000]) await h.at(t);
    return h;
  }

  it('a cached desired state that cannot account for a running workload leaves it alone until the server answers', async () => {
    const h = await restarted({ revision: 0, assignments: [], unknown: 'all' });
    expect(h.runtime.running()).toEqual(['web-1']);
    expect(h.stops).toEqual([]);
    // The server answers without web-1: now "not assigned" means stop.
    h.control.failing = 'no';
    await h.core.poll(0, 0);
    await h.at(3_000);
    expect(h.stops.map((s) => s.replica)).toEqual(['web-1']);
  });

  it('the replicas a partly refused cache names are left alone; a cache that knows stops the unassigned one at once', async () => {
    const partly = await restarted({ revision: 4, assignments: [], unknown: new Set(['web-1']) });
    expect(partly.stops).toEqual([]);
    const known = await restarted({ revision: 4, assignments: [], unknown: new Set() });
    expect(known.stops.map((s) => s.replica)).toEqual(['web-1']);
  });

  it('a cached state left alone is still fenced as the lease runs out', async () => {
    const h = await restarted({ revision: 0, assignments: [], unknown: 'all' });
    await h.at(TTL * 1000 - FENCE.marginMs);
    expect(h.core.status().fenced).toBe(true);
    expect(h.runtime.running()).toEqual([]);
  });

  it('a full disk is a node condition: registered again under the same tenure with disk-full, workloads untouched, cleared once writes work', async () => {
    const h = await running();
    expect(h.control.records.at(-1)?.conditions).toEqual([]);
    h.disk.healthNow = { dir: '/state', noSpace: [{ file: '/state/desired.json', reason: 'ENOSPC: no space left on device' }], freeBytes: 0 };
    await h.at(DISK.checkMs);
    expect(h.core.conditions()).toEqual(['disk-full']);
    await h.core.leaseStep();
    const sent = h.control.records.at(-1)?.conditions ?? [];
    expect(sent.map((c) => [c.kind, c.code])).toEqual([['disk-full', 'CCA-E0570']]);
    expect(sent[0]?.message).toContain('/state/desired.json');
    expect(h.core.status().tenure).toBe(7);
    await h.at(DISK.checkMs * 2);
    expect(h.control.sentEvents.map((e) => e.kind)).toContain('disk-full');
    // Nothing stopped, nothing fenced: a full disk is no reason to touch a workload.
    expect(h.stops).toEqual([]);
    expect(h.runtime.running()).toEqual(['web-1']);
    // Still full at the next checks: not published again.
    const records = h.control.records.length;
    await h.core.leaseStep();
    expect(h.control.records.length).toBe(records);
    // Writes work and there is room: cleared, published with the next lease step.
    h.disk.healthNow = { dir: '/state', noSpace: [], freeBytes: 10 * 2 ** 30 };
    await h.at(DISK.checkMs * 3);
    expect(h.core.conditions()).toEqual([]);
    await h.core.leaseStep();
    expect(h.control.records.at(-1)?.conditions).toEqual([]);
    expect(h.runtime.running()).toEqual(['web-1']);
  });
});
