import type { DiagnosticDef } from '../types.js';

/** CCA-E00xx: failures that belong to no one area, above all our own bugs caught at a boundary. */
export const generalCodes = [
  {
    code: 'CCA-E0001',
    blame: 'bug',
    title: 'internal error',
    cause: 'an unexpected failure happened in {where}: {reason}',
    fix: 'report this with `cca bundle`; nothing you did caused it',
  },
  {
    code: 'CCA-E0002',
    blame: 'bug',
    title: 'malformed stored fact',
    cause: 'the value at key {key} does not match its schema: {reason}',
    fix: 'report this with `cca bundle`; the single writer of {prefix} wrote a value it should not have',
  },
  {
    code: 'CCA-E0003',
    blame: 'bug',
    title: 'key outside the layout',
    cause: 'the key {key} cannot be built or read: {reason}',
    fix: 'report this with `cca bundle`; every key must come from the builders in core/keys.ts',
  },
  {
    code: 'CCA-E0004',
    blame: 'user',
    title: 'unusable TLS file',
    cause: '{what} {file} cannot be used: {reason}',
    fix: 'give a readable PEM file holding {expected}; docs/security.md#tls shows how to make them with openssl',
  },
] as const satisfies readonly DiagnosticDef[];
