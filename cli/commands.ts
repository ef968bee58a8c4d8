import type { CommandModule } from './context.js';

/** Each command in its own module, loaded only when it runs. */
export const commands: Record<string, { summary: string; load(): Promise<CommandModule> }> = {
  apply: { summary: 'apply .cca files: local checks, a dry-run diff, confirmation, then apply', load: () => import('./commands/apply.js') },
  get: { summary: 'list services, replicas, nodes, volumes or a service\'s endpoints (-w to follow)', load: () => import('./commands/get.js') },
  query: { summary: 'facts of one kind matching predicates, e.g. cca query replicas \'service=web,desired!=stop\' (-w to follow)', load: () => import('./commands/query.js') },
  logs: { summary: 'a replica\'s output from its node: --tail N, --since 10m, --previous, -f to follow', load: () => import('./commands/logs.js') },
  delete: { summary: 'delete a service', load: () => import('./commands/delete.js') },
  volume: { summary: 'keep a released volume\'s data past its keep_for, or release that hold', load: () => import('./commands/volume.js') },
  fence: { summary: 'assert that a lost node\'s workloads are stopped, so its stateful replicas move', load: () => import('./commands/fence.js') },
  secrets: { summary: 'secret values at rest: `rotate` re-seals them under the server\'s current key', load: () => import('./commands/secrets.js') },
  token: { summary: 'create (shown once), list or revoke API tokens: join, reader, deployer, admin', load: () => import('./commands/token.js') },
  node: { summary: 'cordon, uncordon, drain or remove a node, or reset its credential so the join token may enroll it again', load: () => import('./commands/node.js') },
  repair: { summary: 'ask the scheduler to repair a node\'s allocation after an audit finding (CCA-E0402)', load: () => import('./commands/repair.js') },
  why: { summary: 'the decision chain behind a replica, node or service', load: () => import('./commands/why.js') },
  explain: { summary: 'what a diagnostic code means (offline)', load: () => import('./commands/explain.js') },
  bundle: { summary: 'a redacted .tar.gz of evidence for a bug report (never sent anywhere)', load: () => import('./commands/bundle.js') },
  fmt: { summary: 'format .cca files canonically (--check for CI)', load: () => import('./commands/fmt.js') },
  version: { summary: 'the versions of cca and the server', load: () => import('./commands/version.js') },
  config: { summary: 'named contexts in the config file: get-contexts, current-context, use-context, set-context', load: () => import('./commands/config.js') },
  completion: { summary: 'a shell completion script: bash, zsh or fish', load: () => import('./commands/completion.js') },
  migrate: { summary: 'apply the store\'s schema migrations alone (pods may then run with --no-migrate)', load: () => import('./commands/migrate.js') },
  store: { summary: 'snapshot a store to a file, restore one, or copy a store to another backend', load: () => import('./commands/store.js') },
  server: { summary: 'run the API server', load: () => import('./commands/server.js') },
  agent: { summary: 'run the node agent', load: () => import('./commands/agent.js') },
  help: { summary: 'this list, or one command\'s flags and examples', load: () => import('./commands/help.js') },
};
