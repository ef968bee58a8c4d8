import {
  ClientClosedError,
  EtcdLeaseInvalidError,
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCInternalError,
  GRPCOutOfRangeError,
  GRPCUnavailableError,
  GRPCUnknownError,
} from 'etcd3';
import { CcaError, messageOf } from '../../core/diagnostics/index.js';
import { tlsFailure } from '../tls-failure.js';

const ETCD_TLS_FIX =
  "check that the URL's ca= is the CA that signed etcd's --cert-file and that the certificate names the host in the URL; when etcd runs --client-cert-auth, give cert= and key= of a certificate its --trusted-ca-file signed";

/** What etcd said, reduced to the cases the store answers differently. */
export type EtcdFailure =
  | { kind: 'compacted' }
  | { kind: 'future' }
  | { kind: 'leaseNotFound' }
  | { kind: 'leaseExists' }
  | { kind: 'tooLarge'; message: string }
  | { kind: 'closed' }
  | { kind: 'tls'; reason: string }
  | { kind: 'unreachable'; message: string }
  | { kind: 'other'; message: string };

export function classify(e: unknown): EtcdFailure {
  const message = messageOf(e);
  // Before "unreachable": gRPC reports a refused certificate as UNAVAILABLE too, but
  // retrying cannot fix it, and the fix is a setting, not a restart.
  const tls = tlsFailure(e);
  if (tls) return { kind: 'tls', reason: tls };
  if (e instanceof EtcdLeaseInvalidError || /requested lease not found/.test(message)) return { kind: 'leaseNotFound' };
  if (/lease already exists/.test(message)) return { kind: 'leaseExists' };
  if (e instanceof GRPCOutOfRangeError || /mvcc: required revision/.test(message)) {
    if (/compacted/.test(message)) return { kind: 'compacted' };
    if (/future revision/.test(message)) return { kind: 'future' };
  }
  if (/request is too large|larger than max|message larger/i.test(message)) return { kind: 'tooLarge', message };
  if (e instanceof ClientClosedError) return { kind: 'closed' };
  if (
    e instanceof GRPCUnavailableError ||
    e instanceof GRPCDeadlineExceededError ||
    e instanceof GRPCCancelledError ||
    e instanceof GRPCInternalError ||
    e instanceof GRPCUnknownError ||
    /ECONNREFUSED|ECONNRESET|No connection established|circuit|timed out|leader changed|no leader/i.test(message)
  ) {
    return { kind: 'unreachable', message };
  }
  return { kind: 'other', message };
}

/**
 * Translate an etcd failure that needs no extra facts into a coded error. A connection
 * failure during a write is "outcome unknown": etcd may have applied it.
 */
export function translate(e: unknown, ctx: { write: boolean; target: string; lease?: number }): CcaError {
  if (e instanceof CcaError) return e;
  const f = classify(e);
  switch (f.kind) {
    case 'leaseNotFound':
      return new CcaError('CCA-E0107', { lease: ctx.lease ?? 'given' }, { cause: e });
    case 'tooLarge':
      return new CcaError('CCA-E0121', { reason: f.message }, { cause: e });
    case 'closed':
      return new CcaError('CCA-E0113', {}, { cause: e });
    case 'tls':
      return new CcaError('CCA-E0140', { backend: 'etcd', target: ctx.target, reason: f.reason, fix: ETCD_TLS_FIX }, { cause: e });
    case 'unreachable':
      return ctx.write
        ? new CcaError('CCA-E0112', { backend: 'etcd', reason: f.message }, { cause: e })
        : new CcaError('CCA-E0111', { backend: 'etcd', reason: f.message, target: ctx.target }, { cause: e });
    default:
      return new CcaError('CCA-E0118', { backend: 'etcd', reason: messageOf(e) }, { cause: e });
  }
}
