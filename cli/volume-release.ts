import { volumesAnswer, type ApiVolume } from './api.js';
import type { Context } from './context.js';
import { roughDuration } from './views.js';

/** A volume a change releases: its data is deleted keep_for after, on each of these nodes. */
export interface Release {
  service: string;
  volume: string;
  nodes: string[];
  keepForMs: number;
}

/**
 * The volumes a change releases: every volume of a service that goes, and those a changed
 * service no longer declares. Ones already releasing are left out (nothing new happens to them).
 */
export function releasedBy(volumes: readonly ApiVolume[], gone: ReadonlySet<string>, declared: ReadonlyMap<string, ReadonlySet<string>>): Release[] {
  const out = new Map<string, Release>();
  for (const v of volumes) {
    if (!v.wanted || v.state === 'releasing') continue;
    const keeps = declared.get(v.service);
    if (!gone.has(v.service) && (keeps === undefined || keeps.has(v.volume))) continue;
    const id = `${v.service}/${v.volume}`;
    const r = out.get(id) ?? { service: v.service, volume: v.volume, nodes: [], keepForMs: v.keepForMs ?? 0 };
    r.nodes.push(v.node);
    out.set(id, r);
  }
  return [...out.values()];
}

/** What to tell people before they confirm: which data goes, where, and when. */
export function describeReleases(releases: readonly Release[]): string {
  return releases
    .map((r) => {
      const when = r.keepForMs === 0 ? 'deleted at once (keep_for = 0)' : `deleted ${roughDuration(r.keepForMs)} after (keep_for); \`cca volume keep ${r.service} ${r.volume}\` keeps it`;
      return `volume ${r.volume} of ${r.service} on ${r.nodes.join(', ')}: its data is ${when}\n`;
    })
    .join('');
}

/** Every volume the server knows, to say before a confirmation which data a change releases. */
export async function currentVolumes(ctx: Context): Promise<ApiVolume[]> {
  return (await ctx.client().json('GET', '/v1/volumes', volumesAnswer)).volumes;
}
