import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { IOptions } from 'etcd3';
import { CcaError, messageOf } from '../../core/diagnostics/index.js';

type Credentials = NonNullable<IOptions['credentials']>;

const EXPECTED = {
  ca: 'the CA certificate that signed the etcd server certificate',
  cert: 'the client certificate etcd trusts (its --trusted-ca-file signed it)',
  key: 'the private key of the client certificate, unencrypted',
} as const;

/** One file of the URL's `ca=`, `cert=` or `key=`, read and checked, or CCA-E0004 naming it. */
function pem(param: keyof typeof EXPECTED, file: string): Buffer {
  const what = `the etcd URL's ${param}=`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CcaError('CCA-E0004', { what, file, reason: messageOf(e), expected: EXPECTED[param] });
  }
  try {
    if (param === 'key') createPrivateKey(text);
    else new X509Certificate(text);
  } catch (e) {
    throw new CcaError('CCA-E0004', { what, file, reason: `not PEM ${param === 'key' ? 'private key' : 'certificate'} (${messageOf(e)})`, expected: EXPECTED[param] });
  }
  return Buffer.from(text);
}

/**
 * etcd3's `credentials` (gRPC's createSsl) from an etcd+https:// URL's files. gRPC replaces the
 * system roots with the given root certificate, so without `ca=` the system roots are passed.
 */
export function etcdCredentials(files: { ca?: string; cert?: string; key?: string }): Credentials {
  return {
    rootCertificate: files.ca ? pem('ca', files.ca) : Buffer.from(rootCertificates.join('\n')),
    ...(files.cert ? { certChain: pem('cert', files.cert) } : {}),
    ...(files.key ? { privateKey: pem('key', files.key) } : {}),
  };
}
