import { CcaError } from '../core/diagnostics/index.js';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../core/keys.js';
import { roleOfToken, tokenUnusable, type TokenRole } from '../core/model/auth.js';
import type { Decision } from '../core/model/facts.js';
import type { Compare, Op, Store } from '../db/store.js';
import { newIssuedToken, newNodeCredential, sha256, unusableError, type Principal } from './auth.js';

/**
 * Node identity and API tokens as store transactions: enrollment creates a node's first
 * credential only, rotation replaces it under the old one's mod revision, a reset deletes
 * it with a decision record; tokens are issued, listed and revoked. Every decision a write
 * depends on is compared in the same transaction, so two racing requests cannot both win.
 */

const ATTEMPTS = 5;

const credentialValue = (credential: string, now: number) => encodeFact('nodeCredential', { sha256: sha256(credential), createdAt: now });

/**
 * The join token (or an admin) enrolls `node`: only while it has no credential. A token
 * with a use count gives one use in the same transaction, compared on its mod revision: of
 * two enrollments racing for the last use, one fails its compare and reads "used up".
 */
export async function enrollNode(store: Store, who: Principal, node: string, now = Date.now()): Promise<{ credential: string; revision: number }> {
  const credKey = buildKey('nodeCredential', node);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const compare: Compare[] = [{ key: credKey, target: 'createRevision', op: '=', value: 0 }];
    const success: Op[] = [];
    if (who.kind === 'token') {
      const tokenKey = buildKey('authToken', who.id);
      const kv = await store.get(tokenKey);
      // Revoked by deletion between authentication and now: as unknown as any other token.
      if (!kv) throw new CcaError('CCA-E0605', { needs: 'a join token (or an admin token)', got: 'no valid token' });
      const t = decodeFact('authToken', tokenKey, kv.value);
      const refused = unusableError(who.id, t, now);
      if (refused) throw refused;
      compare.push({ key: tokenKey, target: 'modRevision', op: '=', value: kv.modRevision });
      if (t.usesLeft !== undefined) success.push({ put: { key: tokenKey, value: encodeFact('authToken', { ...t, usesLeft: t.usesLeft - 1 }) } });
    }
    const credential = newNodeCredential(node);
    success.push({ put: { key: credKey, value: credentialValue(credential, now) } });
    const r = await store.txn({ compare, success });
    if (r.succeeded) return { credential, revision: r.revision };
    const existing = await store.get(credKey);
    if (existing) throw new CcaError('CCA-E0630', { node, revision: existing.createRevision });
    // The token changed meanwhile (another enrollment took a use): read it again.
  }
  throw new CcaError('CCA-E0611', { what: `the token used to enroll node ${node}` });
}

/** A node's agent replaces its credential with a new one; the one it called with stops working. */
export async function rotateCredential(store: Store, node: string, credentialRevision: number, now = Date.now()): Promise<{ credential: string; revision: number }> {
  const key = buildKey('nodeCredential', node);
  const credential = newNodeCredential(node);
  const r = await store.txn({
    compare: [{ key, target: 'modRevision', op: '=', value: credentialRevision }],
    success: [{ put: { key, value: credentialValue(credential, now) } }],
  });
  if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `the credential of node ${node}` });
  return { credential, revision: r.revision };
}

/** Milliseconds padded so that decision ids sort by time (as the controllers' `timeTag`). */
const timeTag = (at: number) => String(Math.max(0, Math.floor(at))).padStart(13, '0');

/**
 * An admin deletes a node's credential so the join token may enroll the name again (a
 * machine rebuilt, a credential lost or stolen). Audited: the decision that did it is
 * written in the same transaction, cites the credential as it was, and `cca why node`
 * shows it.
 */
export async function resetCredential(store: Store, node: string, by: string, now = Date.now()): Promise<{ revision: number; decision: string }> {
  const key = buildKey('nodeCredential', node);
  const kv = await store.get(key);
  if (!kv) throw new CcaError('CCA-E0635', { node, action: 'reset' });
  const id = `${timeTag(now)}-api-reset-credential`;
  const decisionKey = buildKey('decision', 'node', node, id);
  const decision: Decision = {
    id,
    kind: 'node',
    subject: node,
    controller: 'api',
    action: `reset the credential of node ${node}`,
    at: now,
    // The stored value is a hash: reading it grants nothing, so it is kept as evidence.
    evidence: [{ key, modRevision: kv.modRevision, value: kv.value }],
    cause: { fact: key, modRevision: kv.modRevision },
    reasons: [`${by} reset the credential issued at revision ${kv.createRevision}: it no longer authenticates, and the join token may enroll node ${node} again`],
  };
  const r = await store.txn({
    compare: [
      { key, target: 'modRevision', op: '=', value: kv.modRevision },
      { key: decisionKey, target: 'createRevision', op: '=', value: 0 },
    ],
    success: [{ delete: { key } }, { put: { key: decisionKey, value: encodeFact('decision', decision) } }],
  });
  if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `the credential of node ${node}` });
  return { revision: r.revision, decision: decisionKey };
}

export interface TokenView {
  id: string;
  role: TokenRole | 'unknown';
  name: string;
  createdAt: number;
  expiresAt: number | null;
  usesLeft: number | null;
  /** active, or why it no longer works. */
  state: 'active' | 'revoked' | 'expired' | 'used up';
}

export interface NewToken {
  role: TokenRole;
  name?: string | undefined;
  expiresInSeconds?: number | undefined;
  uses?: number | undefined;
}

/** Issue a token: its hash is stored, the token itself is returned once and never again. */
export async function createToken(store: Store, req: NewToken, now = Date.now()): Promise<{ token: string; view: TokenView; revision: number }> {
  const { id, token } = newIssuedToken(req.role);
  const key = buildKey('authToken', id);
  const value = {
    sha256: sha256(token),
    createdAt: now,
    role: req.role,
    ...(req.name !== undefined ? { name: req.name } : {}),
    ...(req.expiresInSeconds !== undefined ? { expiresAt: now + req.expiresInSeconds * 1000 } : {}),
    ...(req.uses !== undefined ? { uses: req.uses, usesLeft: req.uses } : {}),
  };
  const r = await store.txn({ compare: [{ key, target: 'createRevision', op: '=', value: 0 }], success: [{ put: { key, value: encodeFact('authToken', value) } }] });
  // 48 random bits: a collision is a bug-level surprise, not something to retry quietly.
  if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `token ${id}` });
  return { token, view: viewOf(id, decodeFact('authToken', key, encodeFact('authToken', value)), now), revision: r.revision };
}

function viewOf(id: string, t: ReturnType<typeof decodeFact<'authToken'>>, now: number): TokenView {
  return {
    id,
    role: roleOfToken(id, t) ?? 'unknown',
    name: t.name ?? '',
    createdAt: t.createdAt,
    expiresAt: t.expiresAt ?? null,
    usesLeft: t.usesLeft ?? null,
    state: tokenUnusable(t, now) ?? 'active',
  };
}

export async function listTokens(store: Store, now = Date.now()): Promise<{ revision: number; tokens: TokenView[] }> {
  const r = await store.range({ prefix: prefixOf('authToken') });
  const tokens = r.kvs.map((kv) => viewOf(kv.key.slice(prefixOf('authToken').length), decodeFact('authToken', kv.key, kv.value), now));
  // The bootstrap tokens first, then in the order they were issued.
  const rank = (t: TokenView) => (t.id === 'admin' ? 0 : t.id === 'join' ? 1 : 2);
  tokens.sort((a, b) => rank(a) - rank(b) || a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  return { revision: r.revision, tokens };
}

/** Revoke a token: its record stays as a tombstone, so using it is refused as revoked (CCA-E0633). */
export async function revokeToken(store: Store, id: string, now = Date.now()): Promise<{ revision: number; view: TokenView }> {
  const key = buildKey('authToken', id);
  const kv = await store.get(key);
  if (!kv) throw new CcaError('CCA-E0637', { id });
  const t = decodeFact('authToken', key, kv.value);
  if (t.revokedAt !== undefined) return { revision: kv.modRevision, view: viewOf(id, t, now) };
  const next = { ...t, revokedAt: now };
  const r = await store.txn({ compare: [{ key, target: 'modRevision', op: '=', value: kv.modRevision }], success: [{ put: { key, value: encodeFact('authToken', next) } }] });
  if (!r.succeeded) throw new CcaError('CCA-E0611', { what: `token ${id}` });
  return { revision: r.revision, view: viewOf(id, next, now) };
}
