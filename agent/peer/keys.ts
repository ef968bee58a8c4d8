import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The agent's peer identity: an Ed25519 key pair made once, kept in the state directory
 * (0600), whose public half goes into the node record. Peers cannot ask the server whether
 * a credential is good (the server may be what is down), so questions and answers carry
 * signatures checked against the keys in the membership copy (docs/fencing.md).
 */
export class PeerKeys {
  private constructor(private readonly privateKey: KeyObject, readonly publicKey: string) {}

  /** Load `<dir>/peer-key.pem`, or make it. */
  static inDir(dir: string): PeerKeys {
    const file = join(dir, 'peer-key.pem');
    let pem: string;
    try {
      pem = readFileSync(file, 'utf8');
    } catch {
      pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const tmp = `${file}.tmp`;
      writeFileSync(tmp, pem, { mode: 0o600 });
      renameSync(tmp, file);
    }
    return PeerKeys.fromPem(pem);
  }

  static fromPem(pem: string): PeerKeys {
    const key = createPrivateKey(pem);
    return new PeerKeys(key, rawPublicKey(createPublicKey(key)));
  }

  static generate(): PeerKeys {
    return PeerKeys.fromPem(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  }

  sign(message: string): string {
    return sign(null, Buffer.from(message, 'utf8'), this.privateKey).toString('base64');
  }
}

/** SPKI DER of an Ed25519 key is a fixed 12-byte header and the 32 raw bytes. */
const SPKI_HEADER = Buffer.from('302a300506032b6570032100', 'hex');

function rawPublicKey(k: KeyObject): string {
  return k.export({ type: 'spki', format: 'der' }).subarray(SPKI_HEADER.length).toString('base64');
}

/** Does `signature` sign `message` under the raw base64 public key? False for anything malformed. */
export function verifySignature(publicKey: string, message: string, signature: string): boolean {
  try {
    const raw = Buffer.from(publicKey, 'base64');
    const sig = Buffer.from(signature, 'base64');
    if (raw.length !== 32 || sig.length !== 64) return false;
    const key = createPublicKey({ key: Buffer.concat([SPKI_HEADER, raw]), format: 'der', type: 'spki' });
    return verify(null, Buffer.from(message, 'utf8'), key, sig);
  } catch {
    return false;
  }
}
