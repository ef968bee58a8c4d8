import type { DiagnosticDef } from '../types.js';

/** CCA-E06xx: the HTTP API and its server. */
export const serverCodes = [
  {
    code: 'CCA-E0601',
    blame: 'user',
    title: 'malformed request body',
    cause: 'the request body is not valid {format}: {reason}',
    fix: 'send a well-formed {format} body (check quoting and trailing commas)',
  },
  {
    code: 'CCA-E0602',
    blame: 'user',
    title: 'request body too large',
    cause: 'the request body is larger than {maxBytes} bytes',
    fix: 'split the request (apply fewer services at once) or shrink config files',
  },
  {
    code: 'CCA-E0603',
    blame: 'user',
    title: 'invalid request',
    cause: '{where} is not acceptable: {reason}',
    fix: 'correct the request as described; `docs/api.md` lists every field',
  },
  {
    code: 'CCA-E0604',
    blame: 'user',
    title: 'no such endpoint',
    cause: 'there is no endpoint {method} {path}',
    fix: 'check the URL and method against `docs/api.md`',
  },
  {
    code: 'CCA-E0605',
    blame: 'user',
    title: 'not authenticated',
    cause: 'this endpoint needs {needs}, and the request carried {got}',
    fix: 'pass the token with `Authorization: Bearer <token>` (the CLI: --token or CCA_TOKEN)',
  },
  {
    code: 'CCA-E0606',
    blame: 'user',
    title: 'forbidden',
    cause: 'the credential of node {node} may not {action}',
    fix: 'an agent may only act for its own node; use the credential issued to {target}',
  },
  {
    code: 'CCA-E0607',
    blame: 'user',
    title: 'unsupported content type',
    cause: 'the body was sent as {contentType}, which this endpoint does not take',
    fix: 'send {accepted}',
  },
  {
    code: 'CCA-E0608',
    blame: 'bug',
    title: 'internal error',
    cause: 'the server failed unexpectedly while handling the request: {reason}',
    fix: 'report this with `cca bundle` and the request ID {requestId}',
  },
  {
    code: 'CCA-E0609',
    blame: 'user',
    title: 'not found',
    cause: 'there is no {kind} named {name}',
    fix: 'list what exists with `cca get {kind}s`',
  },
  {
    code: 'CCA-E0610',
    blame: 'environment',
    title: 'server not ready',
    cause: 'the server cannot serve yet: {reason}',
    fix: 'wait for the store to become reachable; /readyz turns 200 when it is',
  },
] as const satisfies readonly DiagnosticDef[];
