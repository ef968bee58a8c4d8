import { CERT_REFUSAL_CODES } from '../core/tls-codes.js';
// A plain-text server asked for TLS answers garbage to the handshake: also ours to explain.
const CODES = new Set([...CERT_REFUSAL_CODES, 'ERR_SSL_WRONG_VERSION_NUMBER']);

const TEXT =
  /unable to verify the first certificate|unable to get (local )?issuer certificate|self[- ]signed certificate|certificate has expired|certificate is not yet valid|Hostname\/IP does not match|alert (bad certificate|certificate required|unknown ca|handshake failure)|wrong version number|does not support SSL/i;

/**
 * Whether a store connection failed in its TLS handshake (a CA that did not sign the server's
 * certificate, a name it does not carry, a client certificate refused or missing), and why,
 * in one line. etcd's gRPC client flattens the cause into text, and pg passes Node's TLS
 * errors through with their codes, so both the code and the text are looked at.
 */
export function tlsFailure(e: unknown): string | undefined {
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    const code = (c as { code?: unknown }).code;
    const message = String((c as { message?: unknown }).message ?? c);
    if ((typeof code === 'string' && CODES.has(code)) || TEXT.test(message)) {
      // gRPC's text repeats itself and ends in OpenSSL source paths: keep the first statement.
      const last = /Last error: (?:Error: )?([^\n]*?)(?:\. Resolution note|\n|$)/.exec(message)?.[1] ?? message.split('\n')[0]!;
      const alert = /SSL routines:[^:]*:([^:]+):/.exec(last)?.[1];
      return `${typeof code === 'string' && CODES.has(code) ? `${code}: ` : ''}${alert ?? last}`.trim();
    }
  }
  return undefined;
}
