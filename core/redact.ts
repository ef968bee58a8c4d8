/**
 * Every redaction rule in one place. Two levels:
 * - `secrets`: what any API answer, watch frame, decision's evidence, `why`, diff or printed
 *   spec shows: secret values replaced, nothing else changed.
 * - `evidence`: what leaves the machine (`cca bundle`): also every env value and config
 *   file's content (replaced by their length, so a bug report still says they were set),
 *   credential fields of our own facts, URL passwords and token-shaped text anywhere,
 *   including inside JSON that sits in a string. Structural, not by keyword: a value is
 *   hidden because of where it sits in a spec, whatever its name.
 *
 * Pure and browser-safe; core/keys.ts applies these rules to stored facts by key.
 */
import type { ServiceSpec } from './model/service.js';

export const REDACTED = '(redacted)';

export type RedactLevel = 'secrets' | 'evidence';

const hidden = (v: string): string => (v === '' ? v : `(redacted: ${v.length} characters)`);

/** A spec safe to show: secret values replaced; at `evidence`, env values and config contents too. */
export function redactSpec<T extends Pick<ServiceSpec, 'secrets'> & Partial<Pick<ServiceSpec, 'env' | 'configs' | 'init'>>>(spec: T, level: RedactLevel = 'secrets'): T {
  const out: T = { ...spec, secrets: spec.secrets.map((s) => ({ ...s, value: REDACTED })) };
  if (level === 'secrets') return out;
  const env = (e: Record<string, string>) => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, hidden(v)]));
  if (spec.env) out.env = env(spec.env);
  if (spec.configs) out.configs = spec.configs.map((c) => ({ ...c, content: hidden(c.content) }));
  if (spec.init) out.init = spec.init.map((i) => ({ ...i, env: env(i.env), command: i.command.map((a) => redactText(a)) }));
  return out;
}

const TOKEN = /\bcca_(admin|join|node|reader|deployer)_[A-Za-z0-9_-]+/g;
const BEARER = /\b(Bearer)\s+[^\s"',]+/gi;
const USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/)([^\s/@:]+):([^\s/@]+)@/gi;
const SEALED = /cca:sealed:v1:[\w:-]+/g;

/** Token-shaped text, bearer credentials, URL passwords, sealed values, and any literal the caller knows is secret. */
export function redactText(s: string, literals: readonly string[] = []): string {
  let out = s
    .replace(TOKEN, `cca_$1_${REDACTED}`)
    .replace(BEARER, `$1 ${REDACTED}`)
    .replace(USERINFO, `$1$2:${REDACTED}@`)
    .replace(SEALED, `cca:sealed:${REDACTED}`);
  for (const lit of literals) if (lit.length >= 4) out = out.split(lit).join(REDACTED);
  return out;
}

/** Where a URL points, without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return redactText(url);
  }
}

/** Fields of our own facts and answers that hold credentials (token hashes, enrolment answers). */
const CREDENTIAL_FIELDS = new Set(['sha256', 'credential', 'token', 'authorization', 'password']);

const looksLikeSpec = (o: Record<string, unknown>): boolean => typeof o.image === 'string' && Array.isArray(o.secrets);

/**
 * Walk a JSON answer: every `{key, value}` and `{fact, current}` pair holding a stored value
 * goes through `storedValue` (core/keys.ts decodes it by key); at `evidence`, also every
 * spec-shaped object, credential field, JSON held in a string, and free text.
 */
export function redactJson<T>(x: T, level: RedactLevel, storedValue: (key: string, value: string) => string): T {
  const walk = (v: unknown, field: string): unknown => {
    if (typeof v === 'string') {
      if (level === 'secrets') return v;
      if (CREDENTIAL_FIELDS.has(field.toLowerCase()) && v !== '') return REDACTED;
      const t = v.trim();
      if ((t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'))) {
        try {
          return JSON.stringify(walk(JSON.parse(t), field));
        } catch {
          // Not JSON after all: scrub it as text.
        }
      }
      return redactText(v);
    }
    if (Array.isArray(v)) return v.map((i) => walk(i, field));
    if (v === null || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(o)) out[k] = walk(val, k);
    if (typeof o.key === 'string' && typeof o.value === 'string') out.value = walk(storedValue(o.key, o.value), 'value');
    if (typeof o.fact === 'string' && typeof o.current === 'string') out.current = walk(storedValue(o.fact, o.current), 'current');
    if (looksLikeSpec(out)) return redactSpec(out as unknown as ServiceSpec, level);
    return out;
  };
  return walk(x, '') as T;
}
