/**
 * The "may import" table of docs/architecture.md, as data. test/architecture/layering.test.ts
 * checks every production import against it and checks that the table in the doc is this
 * one, rendered by renderTable() (CCA_UPDATE_GOLDEN=1 rewrites the doc).
 *
 * A module belongs to the row with the longest matching path (a folder ending in `/`, or a
 * file). The rows are listed bottom-up and a row may import only rows above it, so nothing
 * imports upward and the layers themselves have no cycle (the test checks that too).
 */
export interface Layer {
  /** How the other rows name it. */
  name: string;
  /** Folders (ending in `/`) and files this row covers, repo-relative. */
  paths: string[];
  /** What lives there, for the doc. */
  what: string;
  /** The rows (by name) whose modules it may import, besides its own. */
  imports: string[];
  /**
   * Rows (by name) or single modules (by path) it may import only lazily: an `import()` or a
   * type-only import, so loading this row never loads them (a store backend's driver, a
   * process's start-up).
   */
  lazy?: string[];
  /** Node builtins (`node:fs`…): false where the code runs in the browser or the simulation. */
  builtins: boolean;
  /** The npm packages it may import; absent: any the package.json lists. */
  packages?: string[];
}

export const LAYERS: Layer[] = [
  {
    name: 'core',
    paths: ['core/'],
    what: 'the model (zod), the `.cca` language, the key layout (`core/keys.ts`: every prefix, its schema, its one writer), diagnostics',
    imports: [],
    builtins: false,
    packages: ['zod'],
  },
  { name: 'store interface', paths: ['db/store.ts'], what: 'the `Store` interface (etcd semantics)', imports: ['core'], builtins: false, packages: [] },
  {
    name: 'store kit',
    paths: ['db/'],
    what: 'what every backend shares (txn evaluator, key-space checks, store helpers, watch feed, head waiters) and MemoryStore',
    imports: ['core', 'store interface'],
    builtins: false,
    packages: [],
  },
  { name: 'postgres', paths: ['db/postgres/'], what: 'PostgresStore (drizzle schema, migrations, one SQL operation per module)', imports: ['core', 'store interface', 'store kit'], builtins: true },
  { name: 'sqlite', paths: ['db/sqlite/'], what: 'SqliteStore', imports: ['core', 'store interface', 'store kit'], builtins: true },
  { name: 'etcd', paths: ['db/etcd/'], what: 'EtcdStore (etcd3)', imports: ['core', 'store interface', 'store kit'], builtins: true },
  {
    name: 'read mirror',
    paths: ['db/mirror.ts'],
    what: "an in-memory copy of some prefixes, kept by one watch, that controller steps read (a pod's informer cache)",
    imports: ['core', 'store interface', 'store kit'],
    builtins: true,
    packages: ['sorted-btree'],
  },
  {
    name: 'store transfer',
    paths: ['db/transfer/'],
    what: 'snapshots and copies of a whole store at one revision, between any two backends (`cca store`)',
    imports: ['core', 'store interface'],
    builtins: true,
    packages: ['zod'],
  },
  {
    name: 'openStore',
    paths: ['db/index.ts'],
    what: '`openStore(url)`',
    imports: ['core', 'store interface', 'store kit'],
    lazy: ['postgres', 'sqlite', 'etcd'],
    builtins: false,
    packages: [],
  },
  {
    name: 'step kit',
    paths: ['jobs/controller.ts', 'jobs/facts.ts', 'jobs/decode-memo.ts', 'jobs/ids.ts', 'jobs/write.ts', 'jobs/retry.ts', 'jobs/stale-observations.ts', 'jobs/decisions/', 'jobs/placement/'],
    what: "the controllers' kit: the step contract, typed fact reads and writes (the one read layer, one write type, one retry policy), decision records and `why`, the placement solver",
    imports: ['core', 'store interface', 'store kit'],
    builtins: false,
    packages: [],
  },
  {
    name: 'status views',
    paths: ['jobs/views/'],
    what: "what the API, the CLI and the console show of services, replicas and nodes, read at one revision (browser-safe)",
    imports: ['core', 'store interface', 'step kit'],
    builtins: false,
    packages: [],
  },
  {
    name: 'controllers',
    paths: ['jobs/controllers/'],
    what: 'the controllers, as pure steps',
    imports: ['core', 'store interface', 'step kit'],
    builtins: false,
    packages: [],
  },
  {
    name: 'drivers',
    paths: ['jobs/driver.ts', 'jobs/step-runner.ts', 'jobs/refusals.ts', 'jobs/wake-table.ts', 'jobs/maintenance.ts'],
    what: 'the in-process driver and what every driver shares (running a step, routing wakeups, lease expiry and compaction)',
    imports: ['core', 'store interface', 'step kit'],
    builtins: false,
    packages: [],
  },
  {
    name: 'graphile',
    paths: ['jobs/graphile-driver.ts', 'jobs/job-hook.ts', 'jobs/graphile-migrate.ts', 'jobs/step-mirror.ts'],
    what: "the graphile-worker driver (Postgres only) and its steps' read mirror",
    imports: ['core', 'store interface', 'postgres', 'read mirror', 'step kit', 'drivers'],
    builtins: false,
  },
  { name: 'agent core', paths: ['agent/core/'], what: "the agent's I/O-free decisions, shared with the simulation", imports: ['core'], builtins: false, packages: ['zod'] },
  {
    name: 'simulation',
    paths: ['jobs/sim/'],
    what: 'the deterministic simulation (it runs in the browser too)',
    imports: ['core', 'store interface', 'store kit', 'step kit', 'controllers', 'drivers', 'agent core'],
    builtins: false,
    packages: [],
  },
  {
    name: 'handlers',
    paths: ['handlers/'],
    what: 'the HTTP API as a Hono app (`(Request) → Response`, no state of its own)',
    imports: ['core', 'store interface', 'store kit', 'step kit', 'status views'],
    builtins: true,
  },
  {
    name: 'server',
    paths: ['server/'],
    what: 'the composition root: one pod = store + API + controllers; `npm start`',
    imports: ['core', 'store interface', 'store kit', 'postgres', 'sqlite', 'etcd', 'openStore', 'store transfer', 'step kit', 'controllers', 'drivers', 'graphile', 'handlers'],
    builtins: true,
  },
  { name: 'server process', paths: ['server/run.ts', 'server/main.ts', 'server/dba-run.ts'], what: 'a server process: flags → a running pod until SIGTERM', imports: ['core', 'handlers', 'server'], builtins: true },
  {
    name: 'https client',
    paths: ['agent/https.ts'],
    what: 'HTTPS to a server whose certificate a private CA signed (the agent\'s and the CLI\'s `--ca`)',
    imports: ['core'],
    builtins: true,
  },
  { name: 'agent', paths: ['agent/'], what: 'the node agent and its runtimes; it reaches the server over HTTP only', imports: ['core', 'agent core', 'https client'], builtins: true },
  {
    name: 'agent process',
    paths: ['agent/run.ts', 'agent/main.ts'],
    what: 'an agent process: flags → runtime, network and agent until SIGTERM',
    imports: ['core', 'https client', 'agent'],
    builtins: true,
  },
  {
    name: 'cli',
    paths: ['cli/'],
    what: '`cca`; it reaches the server over HTTP only, and `cca server` / `cca agent` start the processes',
    imports: ['core', 'https client'],
    lazy: ['server/run.ts', 'agent/run.ts', 'server/dba-run.ts'],
    builtins: true,
  },
  { name: 'bin', paths: ['bin/'], what: 'the `cca` launcher', imports: ['cli'], builtins: true },
  {
    name: 'web',
    paths: ['web/'],
    what: 'the console (plain ES modules; the simulation runs in the browser, and the map is measured at scale over a MemoryStore in the page)',
    imports: ['core', 'store kit', 'step kit', 'status views', 'simulation'],
    builtins: false,
    packages: [],
  },
];

/** The row a module belongs to: the longest path that covers it. */
export function layerOf(module: string): Layer | undefined {
  let best: { layer: Layer; length: number } | undefined;
  for (const layer of LAYERS) {
    for (const p of layer.paths) {
      const hit = p.endsWith('/') ? module.startsWith(p) : module === p;
      if (hit && p.length > (best?.length ?? -1)) best = { layer, length: p.length };
    }
  }
  return best?.layer;
}

/** A row by its name. */
export function layerNamed(name: string): Layer | undefined {
  return LAYERS.find((l) => l.name === name);
}

/** A lazy entry: a row by name, or one module by path. */
export function lazyAllows(entry: string, module: string): boolean {
  return entry.endsWith('.ts') ? entry === module : layerNamed(entry) === layerOf(module);
}

const code = (s: string) => `\`${s}\``;
const list = (entries: string[]) => entries.map((e) => (e.endsWith('.ts') ? code(e) : e)).join(', ');

/** The table as docs/architecture.md shows it. */
export function renderTable(): string {
  const rows = LAYERS.map((l) => {
    const own = l.imports.length ? list(l.imports) : 'nothing of ours';
    const lazy = l.lazy?.length ? `; lazily (\`import()\` or types only): ${list(l.lazy)}` : '';
    const env = `${l.builtins ? 'node builtins' : 'no node builtins'}; ${l.packages === undefined ? 'any package' : l.packages.length ? l.packages.join(', ') : 'no package'}`;
    return `| ${l.name} | ${l.paths.map(code).join(', ')} | ${l.what} | ${own}${lazy} | ${env} |`;
  });
  return ['| row | modules | what | may import of ours | and of the platform |', '|---|---|---|---|---|', ...rows].join('\n');
}
