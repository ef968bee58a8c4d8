import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { CcaError, messageOf } from '../core/diagnostics/index.js';

/** The server's certificate chain and private key, PEM, as `https.createServer` takes them. */
export interface ServerTls {
  cert: string;
  key: string;
}

function read(flag: string, file: string, expected: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new CcaError('CCA-E0004', { what: flag, file, reason: messageOf(e), expected });
  }
}

/**
 * Read and check `--tls-cert` and `--tls-key` before anything listens, so a wrong file is a
 * coded error naming it, not a TLS handshake failure at the first client.
 */
export function loadServerTls(certFile: string, keyFile: string): ServerTls {
  const certExpected = 'the server certificate (and any intermediates), PEM';
  const keyExpected = 'the private key of the server certificate, PEM, unencrypted';
  const cert = read('--tls-cert', certFile, certExpected);
  const key = read('--tls-key', keyFile, keyExpected);
  try {
    new X509Certificate(cert);
  } catch (e) {
    throw new CcaError('CCA-E0004', { what: '--tls-cert', file: certFile, reason: `not a PEM certificate (${messageOf(e)})`, expected: certExpected });
  }
  try {
    createPrivateKey(key);
  } catch (e) {
    throw new CcaError('CCA-E0004', { what: '--tls-key', file: keyFile, reason: `not a usable PEM private key (${messageOf(e)})`, expected: keyExpected });
  }
  try {
    createSecureContext({ cert, key });
  } catch (e) {
    throw new CcaError('CCA-E0004', {
      what: '--tls-key',
      file: keyFile,
      reason: `it does not belong to the certificate in ${certFile} (${messageOf(e)})`,
      expected: keyExpected,
    });
  }
  return { cert, key };
}
