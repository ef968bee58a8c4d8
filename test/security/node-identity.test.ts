import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import { ADMIN, JOIN, errorOf, secured } from './support.js';

/**
 * Issue 16 §1: the join token (on every machine) enrolls a node's first credential only.
 * Taking over a node that has one is refused; an admin reset or the node's own rotation
 * are the only ways to a new credential.
 */
describe('enrollment creates a node\'s first credential only', () => {
  test('the join token cannot take over an enrolled node: coded refusal, nothing written, the victim keeps working', async () => {
    const { call, store, enroll, register } = await secured();
    const victim = await enroll('n1');
    await register('n1', victim);
    const credKey = buildKey('nodeCredential', 'n1');
    const before = { revision: await store.revision(), cred: await store.get(credKey) };
    const takeover = await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN });
    expect(takeover.status).toBe(409);
    const err = await errorOf(takeover);
    expect(err).toMatchObject({ code: 'CCA-E0630', params: { node: 'n1' } });
    expect(err.message).toContain('already has a credential');
    expect(await store.revision()).toBe(before.revision);
    expect(await store.get(credKey)).toEqual(before.cred);
    expect((await call('GET', '/v1/agent/nodes/n1/assignments?waitMs=0', { token: victim })).status).toBe(200);
    // The admin token is no way around it either: only a reset makes room.
    expect(await errorOf(await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: ADMIN }))).toMatchObject({ code: 'CCA-E0630' });
  });

  test('an admin reset deletes the credential with a decision `why node` shows; then the join token enrolls the name again', async () => {
    const { call, store, enroll } = await secured();
    const old = await enroll('n1');
    const reset = await call('POST', '/v1/nodes/n1/reset', { token: ADMIN });
    expect(reset.status).toBe(200);
    const body = (await reset.json()) as { reset: string; revision: number; decision: string };
    expect(body.reset).toBe('n1');
    expect(await store.get(buildKey('nodeCredential', 'n1'))).toBeNull();
    // The decision was written in the reset's own transaction.
    const decisionKv = await store.get(body.decision);
    expect(decisionKv?.modRevision).toBe(body.revision);
    expect(decodeFact('decision', body.decision, decisionKv!.value)).toMatchObject({ kind: 'node', subject: 'n1', controller: 'api', cause: { fact: buildKey('nodeCredential', 'n1') } });
    expect((await call('GET', '/v1/agent/nodes/n1/assignments?waitMs=0', { token: old })).status).toBe(401);
    const whyNode = (await (await call('GET', '/v1/why/node/n1', { token: ADMIN })).json()) as { chain: { decision: { action: string; reasons: string[] } }[]; complete: boolean };
    expect(whyNode.chain[0]!.decision.action).toBe('reset the credential of node n1');
    expect(whyNode.chain[0]!.decision.reasons[0]).toContain('admin token admin');
    expect(whyNode.complete).toBe(true);
    const fresh = await enroll('n1');
    expect(fresh).not.toBe(old);
    expect((await call('GET', '/v1/agent/nodes/n1/assignments?waitMs=0', { token: fresh })).status).toBe(200);
    // Nothing to reset is said so, and writes nothing.
    const rev = await store.revision();
    const none = await call('POST', '/v1/nodes/ghost/reset', { token: ADMIN });
    expect(none.status).toBe(404);
    expect(await errorOf(none)).toMatchObject({ code: 'CCA-E0635' });
    expect(await store.revision()).toBe(rev);
    expect((await store.range({ prefix: prefixOf('decision', 'node', 'n1') })).kvs).toHaveLength(1);
  });

  test('rotation: the node\'s own credential buys a new one and stops working; racing rotations leave exactly one', async () => {
    const { call, store, enroll } = await secured();
    const first = await enroll('n1');
    const other = await enroll('n2');
    const r = await call('POST', '/v1/agent/nodes/n1/rotate', { token: first });
    expect(r.status).toBe(200);
    const second = ((await r.json()) as { credential: string }).credential;
    expect(second).toMatch(/^cca_node_/);
    expect((await call('GET', '/v1/agent/nodes/n1/assignments?waitMs=0', { token: first })).status).toBe(401);
    expect((await call('GET', '/v1/agent/nodes/n1/assignments?waitMs=0', { token: second })).status).toBe(200);
    expect((await call('POST', '/v1/agent/nodes/n1/rotate', { token: first })).status).toBe(401);
    // Another node's credential, the join token and the admin token cannot rotate n1's.
    expect(await errorOf(await call('POST', '/v1/agent/nodes/n1/rotate', { token: other }))).toMatchObject({ code: 'CCA-E0606' });
    expect(await errorOf(await call('POST', '/v1/agent/nodes/n1/rotate', { token: JOIN }))).toMatchObject({ code: 'CCA-E0636' });
    expect(await errorOf(await call('POST', '/v1/agent/nodes/n1/rotate', { token: ADMIN }))).toMatchObject({ code: 'CCA-E0636' });
    // Two rotations with the same credential at once: the old hash's mod revision lets one win.
    const racing = await Promise.all([1, 2, 3].map(() => call('POST', '/v1/agent/nodes/n1/rotate', { token: second })));
    const statuses = racing.map((x) => x.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    const winners: string[] = [];
    for (const x of racing) if (x.status === 200) winners.push(((await x.json()) as { credential: string }).credential);
    const stored = decodeFact('nodeCredential', buildKey('nodeCredential', 'n1'), (await store.get(buildKey('nodeCredential', 'n1')))!.value);
    expect(stored.sha256).toBe((await import('../../handlers/auth.js')).sha256(winners[0]!));
  });
});
