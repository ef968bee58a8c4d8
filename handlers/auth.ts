import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { CcaError } from '../core/diagnostics/index.js';
import { buildKey, decodeFact, encodeFact, segmentProblem } from '../core/keys.js';
import type { Store } from '../db/store.js';
import type { RequestIdEnv } from './request-id.js';

/**
 * Who a request speaks for. Tokens are 256-bit random strings with a role prefix; only
 * their SHA-256 is stored. A node credential names its node, so a credential used for
 * another node is recognised (403) rather than merely unknown (401).
 */
export type Principal = { kind: 'admin' } | { kind: 'join' } | { kind: 'node'; node: string } | { kind: 'anonymous' };

export type AuthEnv = RequestIdEnv & { Variables: { principal: Principal } };

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const random = () => randomBytes(32).toString('base64url');

export function newRoleToken(role: 'admin' | 'join'): string {
  return `cca_${role}_${random()}`;
}

export function newNodeCredential(node: string): string {
  return `cca_node_${Buffer.from(node).toString('base64url')}_${random()}`;
}

function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

async function matches(store: Store, key: string, token: string): Promise<boolean> {
  const kv = await store.get(key);
  if (!kv) return false;
  return sameHash(decodeFact(key.startsWith('/auth/nodes/') ? 'nodeCredential' : 'authToken', key, kv.value).sha256, sha256(token));
}

export async function principalOf(store: Store, authorization: string | undefined): Promise<Principal> {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!token) return { kind: 'anonymous' };
  const role = /^cca_(admin|join)_[\w-]{43}$/.exec(token)?.[1] as 'admin' | 'join' | undefined;
  if (role) return (await matches(store, buildKey('authToken', role), token)) ? { kind: role } : { kind: 'anonymous' };
  const node = /^cca_node_([\w-]+)_[\w-]{43}$/.exec(token)?.[1];
  if (node) {
    const name = Buffer.from(node, 'base64url').toString();
    // A name that cannot be a key segment was never issued a credential. Any other failure
    // (the store is down) must surface as such: an agent told "bad token" would re-enroll.
    if (segmentProblem(name) !== undefined) return { kind: 'anonymous' };
    if (await matches(store, buildKey('nodeCredential', name), token)) return { kind: 'node', node: name };
  }
  return { kind: 'anonymous' };
}

/** Record a token's hash; with `onlyIfAbsent`, only when none is stored yet (first start, several pods racing). */
export async function storeTokenHash(store: Store, key: string, token: string, onlyIfAbsent: boolean): Promise<boolean> {
  const kind = key.startsWith('/auth/nodes/') ? 'nodeCredential' : 'authToken';
  const value = encodeFact(kind, { sha256: sha256(token), createdAt: Date.now() });
  const r = await store.txn({
    compare: onlyIfAbsent ? [{ key, target: 'createRevision', op: '=', value: 0 }] : [],
    success: [{ put: { key, value } }],
  });
  return r.succeeded;
}

export interface BootstrapTokens {
  /** Set only when this call created the token: print it once, it is never shown again. */
  admin?: string;
  join?: string;
}

/**
 * Make sure an admin and a join token exist. Tokens given by the operator (env) are
 * installed as given; otherwise the first pod to start generates them.
 */
export async function ensureTokens(store: Store, given: { admin?: string; join?: string } = {}): Promise<BootstrapTokens> {
  const out: BootstrapTokens = {};
  for (const role of ['admin', 'join'] as const) {
    const key = buildKey('authToken', role);
    const preset = given[role];
    if (preset) {
      await storeTokenHash(store, key, preset, false);
      continue;
    }
    const token = newRoleToken(role);
    if (await storeTokenHash(store, key, token, true)) out[role] = token;
  }
  return out;
}

export interface AuthPolicy {
  /** Let anyone read (GET /v1/…) without a token. */
  openReads: boolean;
}

/** Resolve the principal once per request; routes then say who they accept. */
export function authenticate(store: Store): MiddlewareHandler<AuthEnv> {
  return async function authenticateMiddleware(c, next) {
    c.set('principal', await principalOf(store, c.req.header('authorization')));
    await next();
  };
}

function refuse(needs: string, p: Principal): never {
  throw new CcaError('CCA-E0605', { needs, got: p.kind === 'anonymous' ? 'no valid token' : `a ${p.kind} token` });
}

export function requireAdmin(): MiddlewareHandler<AuthEnv> {
  return async function requireAdminMiddleware(c, next) {
    if (c.get('principal').kind !== 'admin') refuse('the admin token', c.get('principal'));
    await next();
  };
}

export function requireReader(policy: AuthPolicy): MiddlewareHandler<AuthEnv> {
  return async function requireReaderMiddleware(c, next) {
    if (!policy.openReads && c.get('principal').kind !== 'admin') refuse('the admin token (reads are not open on this server)', c.get('principal'));
    await next();
  };
}

export function requireJoin(): MiddlewareHandler<AuthEnv> {
  return async function requireJoinMiddleware(c, next) {
    const p = c.get('principal');
    if (p.kind !== 'join' && p.kind !== 'admin') refuse('the join token', p);
    await next();
  };
}

/** An agent acts for its own node only; the admin may act for any. */
export function requireNode(action: string): MiddlewareHandler<AuthEnv> {
  return async function requireNodeMiddleware(c, next) {
    const p = c.get('principal');
    const target = c.req.param('node') ?? '';
    if (p.kind === 'admin') return next();
    if (p.kind !== 'node') refuse(`the credential of node ${target}`, p);
    if (p.node !== target) throw new CcaError('CCA-E0606', { node: p.node, action: `${action} for node ${target}`, target });
    await next();
  };
}
