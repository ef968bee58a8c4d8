import type { NodeEvent, NodeRecordInput, Observation, VolumeRecord } from '../core/model/index.js';
import type { AgentClient } from './client.js';
import type { AssignmentsAnswer, ControlPlane, ObservedVolume, Registration } from './core/ports.js';
import type { StateDir } from './state.js';
import type { VolumeFeed } from './volume-feed.js';

/**
 * The core's control plane over HTTP: the agent routes through AgentClient, the credential
 * kept in the state directory. The core never sees the join token or the credential.
 */
export class HttpControlPlane implements ControlPlane {
  constructor(
    private readonly client: AgentClient,
    private readonly state: StateDir,
    private readonly token: string,
    /** The long-polled volume list; without it every call asks the server. */
    private readonly volumeFeed?: VolumeFeed,
  ) {
    this.client.credential = state.credential() ?? '';
  }

  get enrolled(): boolean {
    return this.client.credential !== '';
  }

  /** AgentClient bumps it with every change of credential and tags each ServerError with the one its call used. */
  get generation(): number {
    return this.client.generation;
  }

  async enroll(): Promise<void> {
    const credential = await this.client.enroll(this.token);
    // A failed write is reported by the state directory (CCA-E0594); the credential works from memory.
    this.state.saveCredential(credential);
  }

  forgetCredential(): void {
    this.client.credential = '';
  }

  register(record: NodeRecordInput, leaseTtlSeconds: number, resumeLease?: number): Promise<Registration> {
    return this.client.register(record, leaseTtlSeconds, resumeLease);
  }

  keepalive(lease: number): Promise<{ ttl: number }> {
    return this.client.keepalive(lease);
  }

  assignments(after: number, waitMs: number): Promise<AssignmentsAnswer> {
    return this.client.assignments(after, waitMs);
  }

  async observations(tenure: number, observations: Observation[]): Promise<void> {
    await this.client.observations(tenure, observations);
  }

  async events(tenure: number, events: NodeEvent[]): Promise<void> {
    await this.client.events(tenure, events);
  }

  async volumes(): Promise<VolumeRecord[]> {
    return this.volumeFeed?.current() ?? (await this.client.volumes()).volumes;
  }

  async observedVolumes(tenure: number, volumes: ObservedVolume[]): Promise<void> {
    await this.client.observedVolumes(tenure, volumes);
  }
}
