import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import { serviceSpecSchema, type ServiceSpecInput } from '../../core/model/service.js';
import { MemoryStore } from '../../db/memory.js';
import type { Controller } from '../../jobs/controller.js';
import { listFacts } from '../../jobs/facts.js';
import { Rng } from '../../jobs/sim/rng.js';

const Gi = 1024 ** 3;

/** A MemoryStore on a clock the test moves, and helpers to play the API and the agents. */
export class Bench {
  t = 1_000;
  readonly store = new MemoryStore({ now: () => this.t });
  private rng = new Rng(7);
  readonly leases = new Map<string, number>();

  async step(c: Controller, subject?: string) {
    return c.reconcile({ store: this.store, now: this.t, random: () => this.rng.next(), ...(subject !== undefined ? { subject } : {}) });
  }

  async apply(input: ServiceSpecInput): Promise<void> {
    const spec = serviceSpecSchema.parse(input);
    await this.store.put(buildKey('service', spec.name), encodeFact('service', spec));
  }

  /** An agent's registration: the node record on a fresh lease; returns the tenure. */
  async register(name: string, zone = 'a', cpuMillis = 4_000, maxReplicas?: number): Promise<number> {
    const { id } = await this.store.grantLease(10);
    this.leases.set(name, id);
    const capacity = { cpuMillis, memoryBytes: 8 * Gi, ...(maxReplicas !== undefined ? { replicas: maxReplicas } : {}) };
    const r = await this.store.put(buildKey('node', name), encodeFact('node', { name, zone, capacity, images: { 'web:1': 'sha256:1' } }), { lease: id });
    return r.revision;
  }

  async observe(node: string, replica: string, state: 'running' | 'exited', exitCode?: number, tenure?: number): Promise<void> {
    const t = tenure ?? (await this.store.get(buildKey('node', node)))!.createRevision;
    await this.store.put(
      buildKey('observed', node, replica),
      encodeFact('observed', { replica, service: replica.slice(0, -9), node, tenure: t, state, ...(exitCode !== undefined ? { exitCode } : {}), at: this.t }),
    );
  }

  async replicas(service: string) {
    return (await listFacts(this.store, 'replica', prefixOf('replica', service))).map((f) => f.value);
  }

  async live(service: string) {
    return (await this.replicas(service)).filter((r) => r.desired === 'run' && !r.retired);
  }

  async assignments(node?: string) {
    return (await listFacts(this.store, 'assigned', node ? prefixOf('assigned', node) : prefixOf('assigned'))).map((f) => f.value);
  }

  async fact<K extends 'allocation' | 'nodeStatus' | 'audit'>(kind: K, node: string) {
    const kv = await this.store.get(buildKey(kind as 'allocation', node));
    return kv ? decodeFact(kind, kv.key, kv.value) : undefined;
  }

  /** Run the controllers until one round writes nothing; returns the rounds it took. */
  async settle(controllers: readonly Controller[], rounds = 20): Promise<number> {
    for (let i = 1; i <= rounds; i++) {
      const before = await this.store.revision();
      for (const c of controllers) {
        const subjects = c.subjects ? await c.subjects(this.store) : [undefined];
        for (const s of subjects) await this.step(c, s);
      }
      if ((await this.store.revision()) === before) return i;
    }
    throw new Error(`not settled after ${rounds} rounds`);
  }
}
