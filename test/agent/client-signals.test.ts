import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient, UnreachableError } from '../../agent/client.js';

/**
 * What the client's long-lived signal holds on to. Listeners are public; Node 20's
 * `AbortSignal.any` instead records every combined signal in an internal set on each source
 * (`kDependantSignals`), emptied only when the source aborts: a request that combined its
 * timeout with the long-lived signal stays referenced from it for the client's whole life.
 */
function retained(signal: AbortSignal): number {
  const listeners = getEventListeners(signal, 'abort').length;
  const dependants = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = dependants === undefined ? undefined : (signal as unknown as Record<symbol, { size?: number } | undefined>)[dependants];
  return listeners + (set?.size ?? 0);
}

/** A real HTTP server: keepalive answers at once, assignments hold `hold` ms (a long poll). */
let server: Server;
let url = '';
let hold = 0;
let enrollHold = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    const answer = () => {
      res.setHeader('content-type', 'application/json');
      if (req.url?.includes('/enroll')) return void res.end('{"credential":"cred-1"}');
      res.end(req.url?.includes('/keepalive') ? '{"ttl":10}' : '{"revision":1,"tenure":1,"assignments":[]}');
    };
    if (req.url?.includes('/assignments')) setTimeout(answer, hold);
    else if (req.url?.includes('/enroll')) setTimeout(answer, enrollHold);
    else answer();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('the agent client and its long-lived signal', () => {
  it('keeps nothing on the long-lived signal once requests are done, however many ran', async () => {
    const client = new AgentClient(url, 'n1');
    client.credential = 'cred';
    hold = 0;
    for (let i = 0; i < 300; i++) await client.keepalive(1);
    for (let i = 0; i < 100; i++) await client.assignments(0, 1_000);
    expect(retained(client.lifetime)).toBe(0);
  });

  it('holds one listener per request in flight, and none after', async () => {
    const client = new AgentClient(url, 'n2');
    client.credential = 'cred';
    hold = 300;
    let started = 0;
    const polls = Array.from({ length: 20 }, () => (started++, client.assignments(0, 5_000)));
    expect(started).toBe(20);
    expect(getEventListeners(client.lifetime, 'abort').length).toBeLessThanOrEqual(20);
    await Promise.all(polls);
    expect(retained(client.lifetime)).toBe(0);
  });

  it('still abandons requests in flight on abort(), and still times them out', async () => {
    const client = new AgentClient(url, 'n3', 200);
    client.credential = 'cred';
    hold = 60_000;
    const poll = client.assignments(0, 30_000);
    await new Promise((r) => setTimeout(r, 50));
    client.abort();
    await expect(poll).rejects.toBeInstanceOf(UnreachableError);
    // A short deadline: the server holds the poll far longer than waitMs + timeoutMs.
    const late = new AgentClient(url, 'n4', 200);
    late.credential = 'cred';
    await expect(late.assignments(0, 100)).rejects.toThrow(/timeout|aborted/i);
    expect(retained(late.lifetime)).toBe(0);
  });
});

describe('enrollment', () => {
  it('waits for a slow enrollment past the client’s usual deadline: its answer, once lost, cannot be asked for again', async () => {
    // The server issues the credential once (a second enroll is CCA-E0630): an answer given up
    // on strands the node until an admin resets it. A loaded pod answered in 9 s (bench:soak).
    const client = new AgentClient(url, 'n5', 200);
    enrollHold = 600;
    await expect(client.enroll('join')).resolves.toBe('cred-1');
    expect(client.credential).toBe('cred-1');
    expect(retained(client.lifetime)).toBe(0);
  });
});
