import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { CcaError } from '../core/diagnostics/index.js';
import { buildKey, decodeFact, encodeFact, segmentProblem } from '../core/keys.js';
import { roleOfToken, roleSatisfies, tokenUnusable, type ApiToken, type RouteRole, type TokenRole } from '../core/model/auth.js';
import type { KeyValue, Store } from '../db/store.js';
import { decodeMemo } from '../jobs/decode-memo.js';
import type { RequestIdEnv } from './request-id.js';

/**
 * Who a request speaks for. Tokens are 256-bit random strings with a role prefix; only
 * their SHA-256 is stored, with the role, expiry and uses left. A node credential names its
 * node, so a credential used for another node is recognised (403) rather than merely
 * unknown (401). A token that matches but no longer works (expired, used up, revoked) is
 * `refused`: every route but the public ones answers with the coded reason.
 */
export type Principal =
  | { kind: 'token'; id: string; role: TokenRole }
  | { kind: 'node'; node: string; /** The credential's mod revision as read: rotation compares it. */ credentialRevision: number }
  | { kind: 'refused'; error: CcaError }
  | { kind: 'anonymous' };

/** `openReads`: the server runs with --open-reads, so anonymous requests get the reader role. */
export type AuthEnv = RequestIdEnv & { Variables: { principal: Principal; openReads: boolean } };

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const random = () => randomBytes(32).toString('base64url');

/** A bootstrap token (`ensureTokens`, CCA_ADMIN_TOKEN / CCA_JOIN_TOKEN): its id is its role. */
export function newRoleToken(role: 'admin' | 'join'): string {
  return `cca_${role}_${random()}`;
}

/** An issued token (`cca token create`): the id in it finds its record without a scan. */
export function newIssuedToken(role: TokenRole): { id: string; token: string } {
  const id = randomBytes(6).toString('hex');
  return { id, token: `cca_${role}_${id}_${random()}` };
}

export function newNodeCredential(node: string): string {
  return `cca_node_${Buffer.from(node).toString('base64url')}_${random()}`;
}

export function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** The stored id a token claims, or undefined when it has no token shape. */
function tokenId(token: string): string | undefined {
  const issued = /^cca_(?:admin|deployer|reader|join)_([0-9a-f]{12})_[\w-]{43}$/.exec(token);
  if (issued) return issued[1];
  return /^cca_(admin|join)_[\w-]{43}$/.exec(token)?.[1];
}

/** The coded refusal of a token that matched but no longer works. */
export function unusableError(id: string, t: ApiToken, now: number): CcaError | undefined {
  const why = tokenUnusable(t, now);
  const role = roleOfToken(id, t) ?? 'unknown';
  if (why === 'revoked') return new CcaError('CCA-E0633', { role, id, revokedAt: new Date(t.revokedAt ?? 0).toISOString() });
  if (why === 'expired') return new CcaError('CCA-E0631', { role, id, expiresAt: new Date(t.expiresAt ?? 0).toISOString() });
  if (why === 'used up') return new CcaError('CCA-E0632', { role, id, uses: t.uses ?? 0 });
  return undefined;
}

/**
 * Who `authorization` speaks for. A node credential is looked up in `credentials` when given
 * (the pod's read mirror at the newest revision the pod knows committed, ServerDeps.agentView)
 * and, unless it matches there, in `store`: an agent enrolled or rotated through another pod a
 * moment ago is never refused for this pod's lag (it would enroll again), while a credential
 * reset or rotated through another pod keeps working here until this pod hears of the change
 * (its NOTIFY, or the watch poll within 0.5 s; docs/security.md). Through this pod: at once.
 */
export async function principalOf(store: Store, authorization: string | undefined, now = Date.now(), credentials?: Store): Promise<Principal> {
  const anonymous: Principal = { kind: 'anonymous' };
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!token) return anonymous;
  const id = tokenId(token);
  if (id !== undefined) {
    const key = buildKey('authToken', id);
    const kv = await store.get(key);
    if (!kv) return anonymous;
    const t = decodeFact('authToken', key, kv.value);
    if (!sameHash(t.sha256, sha256(token))) return anonymous;
    const role = roleOfToken(id, t);
    if (!role) return anonymous;
    const refused = unusableError(id, t, now);
    return refused ? { kind: 'refused', error: refused } : { kind: 'token', id, role };
  }
  const node = /^cca_node_([\w-]+)_[\w-]{43}$/.exec(token)?.[1];
  if (node) {
    const name = Buffer.from(node, 'base64url').toString();
    // A name that cannot be a key segment was never issued a credential. Any other failure
    // (the store is down) must surface as such: an agent told "bad token" would re-enroll.
    if (segmentProblem(name) !== undefined) return anonymous;
    const key = buildKey('nodeCredential', name);
    const hash = sha256(token);
    const matches = (kv: KeyValue | null): kv is KeyValue => kv !== null && sameHash(decodeMemo.decodeKv('nodeCredential', kv).sha256, hash);
    const kv = credentials ? await credentials.get(key) : null;
    const confirmed = matches(kv) ? kv : await store.get(key);
    if (matches(confirmed)) return { kind: 'node', node: name, credentialRevision: confirmed.modRevision };
  }
  return anonymous;
}

/** Record a token's hash; with `onlyIfAbsent`, only when none is stored yet (first start, several pods racing). */
export async function storeTokenHash(store: Store, key: string, token: string, onlyIfAbsent: boolean, role?: TokenRole): Promise<boolean> {
  const value = key.startsWith('/auth/nodes/')
    ? encodeFact('nodeCredential', { sha256: sha256(token), createdAt: Date.now() })
    : encodeFact('authToken', { sha256: sha256(token), createdAt: Date.now(), ...(role ? { role } : {}) });
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
      // Installed when absent or changed; the same token again is left as it is, so a
      // restart neither resurrects a revoked token nor forgets when it was created.
      const kv = await store.get(key);
      if (kv && sameHash(decodeFact('authToken', key, kv.value).sha256, sha256(preset))) continue;
      await storeTokenHash(store, key, preset, false, role);
      continue;
    }
    const token = newRoleToken(role);
    if (await storeTokenHash(store, key, token, true, role)) out[role] = token;
  }
  return out;
}

export interface AuthPolicy {
  /** Anonymous requests get the reader role (`--open-reads`). */
  openReads: boolean;
}

/**
 * Resolve the principal once per request; routes then say which role they need.
 * `credentials`: where node credentials are looked up first (principalOf).
 */
export function authenticate(store: Store, policy: AuthPolicy, credentials?: () => Store): MiddlewareHandler<AuthEnv> {
  return async function authenticateMiddleware(c, next) {
    c.set('openReads', policy.openReads);
    c.set('principal', await principalOf(store, c.req.header('authorization'), Date.now(), credentials?.()));
    await next();
  };
}

/**
 * What a route declares it needs; `node` = the credential of the node in its path (or
 * admin), `own credential` = that credential and nothing else.
 */
export type RouteAccess = RouteRole | 'node' | 'own credential';

/** The role a route's middleware declares, for docs/api.md and the test that no route forgets one. */
export function declaredAccess(handler: unknown): RouteAccess | undefined {
  if (typeof handler !== 'function') return undefined;
  // A sub-app with its own error handler (the console) is mounted as a wrapper that keeps
  // the original under Hono's COMPOSED_HANDLER key.
  const h = handler as { access?: RouteAccess; __COMPOSED_HANDLER?: unknown };
  return h.access ?? (h.__COMPOSED_HANDLER !== undefined ? declaredAccess(h.__COMPOSED_HANDLER) : undefined);
}

function declare<H extends MiddlewareHandler<AuthEnv>>(access: RouteAccess, h: H): H {
  return Object.assign(h, { access });
}

function describe(p: Principal): string {
  if (p.kind === 'token') return `a ${p.role} token (${p.id})`;
  if (p.kind === 'node') return `the credential of node ${p.node}`;
  return 'no valid token';
}

const needs: Record<RouteRole, string> = {
  anyone: 'nothing',
  reader: 'the reader role (a reader, deployer or admin token)',
  deployer: 'the deployer role (a deployer or admin token)',
  admin: 'the admin role',
  join: 'a join token (or an admin token)',
};

/** Refuse unless the principal has `role`: 401 without a valid token, 403 with one that lacks it. */
export function checkRole(p: Principal, role: RouteRole, openReads: boolean): void {
  if (role === 'anyone') return;
  // A token that no longer works says so, even where reads are open: its holder must learn.
  if (p.kind === 'refused') throw p.error;
  if (p.kind === 'token' && roleSatisfies(p.role, role)) return;
  // Open reads: anonymous requests are readers, so any request is at least one.
  if (role === 'reader' && openReads) return;
  if (p.kind === 'anonymous') throw new CcaError('CCA-E0605', { needs: needs[role], got: 'no valid token' });
  throw new CcaError('CCA-E0636', { needs: needs[role], got: describe(p) });
}

/** One role check per route: `requireRole('deployer')` (admin ⊇ deployer ⊇ reader; join enrolls only). */
export function requireRole(role: RouteRole): MiddlewareHandler<AuthEnv> {
  return declare(role, async function requireRoleMiddleware(c, next) {
    checkRole(c.get('principal'), role, c.get('openReads'));
    await next();
  });
}

/** A route anyone may use (health, metrics, the console's files): said so, not forgotten. */
export function publicRoute(): MiddlewareHandler {
  return Object.assign(async function publicRouteMiddleware(_c: Parameters<MiddlewareHandler>[0], next: () => Promise<void>) {
    await next();
  }, { access: 'anyone' as RouteAccess });
}

/**
 * An agent acts for its own node only; the admin may act for any. `credentialOnly`: the
 * node's own credential and nothing else (rotation replaces the credential it was called with).
 */
export function requireNode(action: string, opts: { credentialOnly?: boolean } = {}): MiddlewareHandler<AuthEnv> {
  return declare(opts.credentialOnly ? 'own credential' : 'node', async function requireNodeMiddleware(c, next) {
    const p = c.get('principal');
    const target = c.req.param('node') ?? '';
    if (p.kind === 'refused') throw p.error;
    // A name no node could have (NUL, '/', empty, too long) is simply not found, for an admin too.
    if (segmentProblem(target) !== undefined) throw new CcaError('CCA-E0609', { kind: 'node', name: target.slice(0, 253) });
    if (p.kind === 'token' && p.role === 'admin' && !opts.credentialOnly) return next();
    if (p.kind === 'anonymous') throw new CcaError('CCA-E0605', { needs: `the credential of node ${target}`, got: 'no valid token' });
    if (p.kind !== 'node') throw new CcaError('CCA-E0636', { needs: `the credential of node ${target}`, got: describe(p) });
    if (p.node !== target) throw new CcaError('CCA-E0606', { node: p.node, action: `${action} for node ${target}`, target });
    await next();
  });
}

/** Who made a request, for the records and decisions it writes ("admin token 1a2b…"). */
export function principalName(p: Principal): string {
  if (p.kind === 'token') return `${p.role} token ${p.id}`;
  return p.kind === 'node' ? `node ${p.node}` : 'an anonymous caller';
}
