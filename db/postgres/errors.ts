import { CcaError, isCcaError, messageOf } from '../../core/diagnostics/index.js';
import { tlsFailure } from '../tls-failure.js';

const PG_TLS_FIX =
  "check that the URL's sslrootcert= is the CA that signed the server's ssl_cert_file and that the certificate names the host in the URL (pg 8 verifies the name for every sslmode but no-verify); a server that does not support SSL needs ssl=on";

/** SQLSTATE classes and node errors that mean "the connection or server went away". */
function isConnectionError(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.startsWith('08') || code.startsWith('57P') || code === '53300') return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH'].includes(code)) return true;
  }
  return /Connection terminated|connection closed|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(
    e.message,
  );
}

/**
 * Turn whatever a Postgres call threw into a coded diagnostic. `committing` marks a
 * failure while COMMIT was in flight: then nobody knows whether the write happened.
 */
export function pgFailure(e: unknown, target: string, committing = false): CcaError {
  if (isCcaError(e)) return e;
  // A refused certificate is no outage: retrying cannot fix it, a setting can.
  const tls = tlsFailure(e);
  if (tls) return new CcaError('CCA-E0140', { backend: 'postgres', target, reason: tls, fix: PG_TLS_FIX }, { cause: e });
  const reason = messageOf(e);
  if (isConnectionError(e)) {
    return committing
      ? new CcaError('CCA-E0112', { backend: 'postgres', reason }, { cause: e })
      : new CcaError('CCA-E0111', { backend: 'postgres', reason, target }, { cause: e });
  }
  return new CcaError('CCA-E0118', { backend: 'postgres', reason }, { cause: e });
}

/** SQLSTATE 40P01 (deadlock detected) or 40001 (serialization failure): Postgres rolled the transaction back. */
export function abortedByPostgres(e: unknown): boolean {
  const code = e instanceof Error ? (e as { code?: unknown }).code : undefined;
  return code === '40P01' || code === '40001';
}

export { redactUrl } from '../../core/redact.js';
