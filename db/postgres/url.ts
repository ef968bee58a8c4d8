import { accessSync, constants } from 'node:fs';
import { z } from 'zod';
import { CcaError, messageOf } from '../../core/diagnostics/index.js';
import { redactUrl } from './errors.js';

/**
 * The TLS settings of a Postgres URL, checked before pg reads them: pg (8.x) takes sslmode,
 * sslrootcert, sslcert and sslkey from the connection string itself — the URL goes to pg
 * whole, query included — but an unknown sslmode is silently "TLS, verified" there, and a
 * missing file is a raw ENOENT at the first connection.
 *
 * pg 8 treats prefer, require and verify-ca as verify-full (stricter than libpq; it warns
 * once); `uselibpqcompat=true` gives libpq's meanings. docs/security.md says which to use.
 */
const sslParams = z.object({
  sslmode: z.enum(['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']).optional(),
  sslrootcert: z.string().min(1).optional(),
  sslcert: z.string().min(1).optional(),
  sslkey: z.string().min(1).optional(),
  uselibpqcompat: z.enum(['true', 'false']).optional(),
});

const EXPECTED = {
  sslrootcert: 'the CA certificate that signed the Postgres server certificate',
  sslcert: 'the client certificate Postgres trusts',
  sslkey: 'the private key of the client certificate',
} as const;

export function checkPostgresUrl(url: string): void {
  // Only the query is read, and without `new URL`: pg accepts URLs (an unescaped character
  // in a password, a socket directory as host) that the WHATWG parser refuses.
  const at = url.indexOf('?');
  const query = new URLSearchParams(at < 0 ? '' : url.slice(at + 1).split('#')[0]);
  const given = Object.fromEntries([...query].filter(([k]) => k in sslParams.shape));
  const r = sslParams.safeParse(given);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new CcaError('CCA-E0116', { url: redactUrl(url), reason: `${i.path.join('.')}: ${i.message}` });
  }
  for (const param of ['sslrootcert', 'sslcert', 'sslkey'] as const) {
    const file = r.data[param];
    if (file === undefined) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (e) {
      throw new CcaError('CCA-E0004', { what: `the Postgres URL's ${param}=`, file, reason: messageOf(e), expected: EXPECTED[param] });
    }
  }
}
