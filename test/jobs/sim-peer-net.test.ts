import { describe, expect, it } from 'vitest';
import { OutageLatch } from '../../agent/core/quorum.js';
import { cannotReachAfterMs, QUORUM, type MembershipVersion } from '../../core/model/quorum.js';
import { SimPeerNet, type SimPeer } from '../../jobs/sim/peer-net.js';

const T = QUORUM.defaultTtlSeconds * 1000;
const names = ['a', 'b', 'c', 'd', 'e'];
const copy: MembershipVersion = { version: 1, since: 0, members: names.map((node) => ({ node, ttlSeconds: T / 1000 })) };

/** Five agents; `cut` ones have not renewed since 0, the others just did. */
function world(cut: string[], groups: string[][]) {
  const now = cannotReachAfterMs(T);
  const peers = new Map<string, SimPeer>();
  for (const node of names) {
    peers.set(node, {
      node,
      lastOkSentAt: () => (cut.includes(node) ? 0 : now),
      keepaliveInFlight: () => false,
      ttlMs: () => T,
      membership: () => ({ copy, fetchedAt: 0 }),
      latch: new OutageLatch(() => T - 3_000),
    });
  }
  const group = (n: string) => groups.findIndex((g) => g.includes(n));
  return { net: new SimPeerNet((x, y) => group(x) === group(y)), peers, now };
}

describe('the simulation peer network', () => {
  it('everyone cut off from the control plane but not from each other: confirmed', () => {
    const w = world(names, [names]);
    expect(w.net.round(w.peers.get('a')!, w.peers, w.now)).toMatchObject({ confirmed: true, votes: 5 });
    expect(w.peers.get('a')!.latch.confirmsOutage(w.now)).toBe(true);
  });

  it('a majority cut off together confirms; a minority cut off together does not', () => {
    const major = world(['a', 'b', 'c'], [['a', 'b', 'c'], ['d', 'e']]);
    expect(major.net.round(major.peers.get('a')!, major.peers, major.now)).toMatchObject({ confirmed: true, votes: 3 });
    const minor = world(['a', 'b'], [['a', 'b'], ['c', 'd', 'e']]);
    expect(minor.net.round(minor.peers.get('a')!, minor.peers, minor.now)).toMatchObject({ confirmed: false, votes: 2 });
  });

  it('a node isolated from everything hears no one; one whose peers reach the control plane is refuted', () => {
    // Everyone cut off from the control plane, and a from its peers too: it counts only itself.
    const alone = world(names, [['a'], ['b', 'c', 'd', 'e']]);
    expect(alone.net.round(alone.peers.get('a')!, alone.peers, alone.now)).toMatchObject({ confirmed: false, votes: 1 });
    const cutOnlyFromServer = world(['a'], [names]);
    expect(cutOnlyFromServer.net.round(cutOnlyFromServer.peers.get('a')!, cutOnlyFromServer.peers, cutOnlyFromServer.now)).toMatchObject({ confirmed: false });
    // A node that reaches the control plane asks no one.
    expect(cutOnlyFromServer.net.round(cutOnlyFromServer.peers.get('b')!, cutOnlyFromServer.peers, cutOnlyFromServer.now)).toBeUndefined();
  });
});
