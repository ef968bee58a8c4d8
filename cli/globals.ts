import { defineCommand, type FlagSpec } from './spec.js';

/** The flags every command takes, wherever they appear on the line. */
export const globalFlags = {
  server: { type: 'string', value: 'URL', env: 'CCA_SERVER', default: 'the context\'s, else this checkout\'s `npm start` system, else http://127.0.0.1:7070', description: 'the API server' },
  token: { type: 'string', value: 'TOKEN', env: 'CCA_TOKEN', description: 'the bearer token (others on the machine can see a flag: prefer the env or the config file; default: the `npm start` system\'s admin token, sent to that server only)' },
  ca: { type: 'string', value: 'FILE', env: 'CCA_CA', description: 'a PEM CA certificate to trust, beside the system\'s, for an https:// server' },
  config: { type: 'string', value: 'FILE', env: 'CCA_CONFIG', default: '$XDG_CONFIG_HOME/cca/config.json', description: 'the config file' },
  context: { type: 'string', value: 'NAME', env: 'CCA_CONTEXT', default: 'the config file\'s current-context', description: 'the named context of the config file to use' },
  verbose: { type: 'boolean', short: 'v', description: 'errors with cause, fix, context and request ID' },
  output: { type: 'string', short: 'o', value: 'MODE', default: 'plain', choices: ['plain', 'wide', 'json', 'yaml', 'name'], description: 'output mode (each command says which it takes)' },
  'no-color': { type: 'boolean', env: 'NO_COLOR', description: 'no colour escapes (also when NO_COLOR is set, or stdout is not a terminal)' },
  'request-id': { type: 'string', value: 'ID', description: 'send this X-Request-Id on the first request (then ID.1, ID.2, …)' },
  help: { type: 'boolean', short: 'h', description: 'this command\'s help' },
} as const satisfies Record<string, FlagSpec>;

/** The global flags as a spec, for the help renderer and the completion scripts. */
export const globalSpec = defineCommand({ usage: ['cca COMMAND [ARGS…] [FLAGS…]'], flags: globalFlags, examples: [] });
