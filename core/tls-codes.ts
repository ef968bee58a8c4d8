/**
 * OpenSSL's and Node's codes for "this certificate cannot be trusted here": the connection got
 * as far as a certificate, and refusing it was our side's decision (a CA that did not sign it, a
 * name it does not carry, dates). One list for every client that classifies TLS failures (the
 * agent's and the CLI's HTTPS, the store connections).
 */
export const CERT_REFUSAL_CODES: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
