import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Diagnostic } from '../core/diagnostics/index.js';

/** Codes whose HTTP status is more specific than their blame's. */
const byCode: Record<string, ContentfulStatusCode> = {
  'CCA-E0101': 410,
  'CCA-E0102': 400,
  'CCA-E0107': 404,
  'CCA-E0602': 413,
  'CCA-E0604': 404,
  'CCA-E0605': 401,
  'CCA-E0606': 403,
  'CCA-E0607': 415,
  'CCA-E0609': 404,
  'CCA-E0415': 404,
  'CCA-E0112': 503,
  'CCA-E0611': 409,
  'CCA-E0613': 409,
  'CCA-E0630': 409,
  'CCA-E0631': 401,
  'CCA-E0632': 401,
  'CCA-E0633': 401,
  'CCA-E0634': 403,
  'CCA-E0635': 404,
  'CCA-E0636': 403,
  'CCA-E0637': 404,
  'CCA-E0642': 429,
  'CCA-E0643': 429,
  'CCA-E0560': 404,
  'CCA-E0562': 429,
  'CCA-E0563': 503,
  'CCA-E0670': 504,
  'CCA-E0671': 404,
  'CCA-E0672': 404,
};

const byBlame: Record<Diagnostic['blame'], ContentfulStatusCode> = {
  user: 400,
  environment: 503,
  external: 502,
  bug: 500,
};

export function statusFor(d: Diagnostic): ContentfulStatusCode {
  return byCode[d.code] ?? byBlame[d.blame];
}
