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
  {
    code: 'CCA-E0010',
    blame: 'user',
    title: 'unknown query operator',
    cause: '{at} {text}: the operator {op} is not one a query knows',
    fix: 'use one of: {operators} (docs/api.md#fact-queries; in `cca query`: = != < > ^= ? in (…))',
  },
  {
    code: 'CCA-E0011',
    blame: 'user',
    title: 'unknown fact field',
    cause: '{at} {text}: {kind} facts have no field {field}',
    fix: 'name a field the kind has (dot paths for nested ones, e.g. health.readiness); its fields are: {fields}',
  },
  {
    code: 'CCA-E0012',
    blame: 'user',
    title: 'query value of the wrong type',
    cause: '{at} {text}: {part}: {reason}',
    fix: '< and > take a number, in takes a list, prefix a string, exists nothing, = and != a string, number, boolean or null',
  },
  {
    code: 'CCA-E0013',
    blame: 'user',
    title: 'malformed field path',
    cause: '{at} {text}: {field} is not a field path',
    fix: 'write a field as names of letters, digits, _ or - joined by dots (state, health.readiness, labels.zone, secrets.0.name)',
  },
  {
    code: 'CCA-E0014',
    blame: 'user',
    title: 'predicate syntax error',
    cause: 'predicate {index} ({text}) at column {column} of "{expr}": {reason}',
    fix: 'write predicates as field=value, field!=value, field<n, field>n, field^=prefix, field?, field in (a|b) or field=a|b, joined by commas; quote values holding , | ( ) or spaces',
  },
] as const satisfies readonly DiagnosticDef[];
