import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Files of one certificate the test made: PEM certificate and its unencrypted key. */
export interface CertFiles {
  cert: string;
  key: string;
}

export interface TestCa extends CertFiles {
  /** A certificate for 127.0.0.1 and localhost signed by this CA (server and client use). */
  issue(name: string, opts?: { cn?: string }): CertFiles;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * A private CA made with openssl in `dir`, as docs/security.md tells an operator to make one
 * (EC P-256: quick to generate, accepted by Node, etcd and Postgres). Valid for a day.
 */
export function makeTestCa(dir: string, name = 'ca'): TestCa {
  const ca = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  openssl(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', ca.key, '-out', ca.cert, '-days', '1', '-subj', `/CN=ccattler test ${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    dir,
  );
  return {
    ...ca,
    issue(certName, opts = {}) {
      const out = { cert: join(dir, `${certName}.pem`), key: join(dir, `${certName}.key`) };
      const csr = join(dir, `${certName}.csr`);
      const ext = join(dir, `${certName}.ext`);
      writeFileSync(ext, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n');
      openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', out.key, '-out', csr, '-subj', `/CN=${opts.cn ?? 'localhost'}`], dir);
      openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', out.cert, '-days', '1', '-extfile', ext], dir);
      return out;
    },
  };
}
