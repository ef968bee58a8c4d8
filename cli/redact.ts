import { REDACTED } from '../core/model/redact.js';

const SECRET_KEY = /secret|token|password|passwd|credential|authorization|api[-_]?key|sha256|private/i;
const TOKEN = /\bcca_(admin|join|node)_[A-Za-z0-9_-]+/g;
const BEARER = /\b(Bearer)\s+[^\s"',]+/gi;

/**
 * Deep redaction for evidence leaving the machine: a value under a secret-sounding key,
 * every `value` inside a `secrets` list, and JSON nested in strings (decision evidence
 * holds facts as JSON text) are replaced; then token-shaped text anywhere.
 */
export function redactValue(v: unknown, key = '', inSecrets = false): unknown {
  if (typeof v === 'string') {
    if ((SECRET_KEY.test(key) || (inSecrets && key === 'value')) && v !== '') return REDACTED;
    const t = v.trim();
    if ((t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'))) {
      try {
        return JSON.stringify(redactValue(JSON.parse(t)));
      } catch {
        // Not JSON after all: scrub it as text.
      }
    }
    return redactText(v);
  }
  if (Array.isArray(v)) return v.map((x) => redactValue(x, key, key === 'secrets'));
  if (typeof v === 'object' && v !== null) {
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => {
        if (SECRET_KEY.test(k) && k !== 'secrets' && (typeof x === 'string' || typeof x === 'number')) return [k, REDACTED];
        return [k, redactValue(x, k, inSecrets)];
      }),
    );
  }
  return v;
}

/** Token-shaped text, bearer credentials, and any literal the caller knows is secret. */
export function redactText(s: string, literals: readonly string[] = []): string {
  let out = s.replace(TOKEN, `cca_$1_${REDACTED}`).replace(BEARER, `$1 ${REDACTED}`);
  for (const lit of literals) if (lit.length >= 4) out = out.split(lit).join(REDACTED);
  return out;
}
