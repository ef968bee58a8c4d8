import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import type { Observation, Assignment } from '../../core/model/facts.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import type { Controller } from '../../jobs/controller.js';
import type { Bench } from './harness.js';

/** Agents and time played by the controller tests (rollouts, outcomes). */

export type Readiness = (a: Assignment) => Observation['health']['readiness'];

/**
 * Agents played by the test: every assignment runs at once and reports its readiness as
 * `ready` says; a stop is carried out at once. Returns whether anything was written.
 */
export async function agents(b: Bench, ready: Readiness): Promise<boolean> {
  let wrote = false;
  for (const a of await b.assignments()) {
    const nodeKv = await b.store.get(buildKey('node', a.node));
    if (!nodeKv || nodeKv.createRevision !== a.tenure) continue;
    const key = buildKey('observed', a.node, a.replica);
    const cur = await b.store.get(key);
    const obs: Observation = {
      replica: a.replica, service: a.service, node: a.node, tenure: a.tenure,
      state: a.desired === 'stop' ? 'exited' : 'running',
      ...(a.desired === 'stop' ? { exitCode: 143 } : {}),
      restarts: 0,
      health: { liveness: 'unknown', readiness: a.desired === 'stop' ? 'unknown' : ready(a) },
      image: a.spec.image,
      at: b.t,
    };
    const value = encodeFact('observed', obs);
    if (cur?.value === value) continue;
    if (cur && decodeFact('observed', key, cur.value).state === obs.state && JSON.stringify(decodeFact('observed', key, cur.value).health) === JSON.stringify(obs.health)) continue;
    await b.store.put(key, value);
    wrote = true;
  }
  return wrote;
}

/** Controllers and agents until neither writes; `check` runs after every round. */
export const converger = (all: readonly Controller[]) => async (b: Bench, ready: Readiness, check?: () => Promise<void>): Promise<void> => {
  for (let i = 0; i < 60; i++) {
    const before = await b.store.revision();
    for (const c of all) for (const s of (await c.subjects?.(b.store)) ?? [undefined]) {
      await b.step(c, s);
      await check?.();
    }
    await agents(b, ready);
    await check?.();
    if ((await b.store.revision()) === before) return;
  }
  throw new Error('did not converge');
};

/** Time passes with the agents keeping their leases alive (a lease outlives 10 s only by keepalives). */
export async function advance(b: Bench, ms: number): Promise<void> {
  while (ms > 0) {
    const d = Math.min(ms, 2_000);
    b.t += d;
    ms -= d;
    for (const id of b.leases.values()) await b.store.keepAlive(id);
  }
}


/** A web service of three replicas with a readiness check, rolled one at a time; VERSION says which. */
export const webSpec = (version: string, extra: Partial<ServiceSpecInput> = {}): ServiceSpecInput => ({
  name: 'web',
  image: 'web:1',
  replicas: 3,
  env: { VERSION: version },
  health: { readiness: { probe: { type: 'exec', command: ['true'] } } },
  update: { maxSurge: 1, maxUnavailable: 0, progressDeadlineMs: 60_000 },
  ...extra,
});

/** Readiness fails for replicas whose spec says VERSION=bad. */
export const readyUnlessBad: Readiness = (a) => (a.spec.env.VERSION === 'bad' ? 'failing' : 'passing');
