import { parseArgs } from 'node:util';
import { z } from 'zod';
import { CcaError, messageOf } from '../core/diagnostics/index.js';
import { defaultLimits, type ServerLimits } from '../handlers/deps.js';
import { peerNetworksSchema } from '../core/model/peer-address.js';

/** Flags win over environment variables, which win over defaults. */
const configSchema = z.object({
  store: z.string().min(1).default('memory:'),
  port: z.coerce.number().int().min(0).max(65_535).default(7070),
  host: z.string().min(1).default('127.0.0.1'),
  openReads: z.boolean().default(false),
  adminToken: z.string().regex(/^cca_admin_[\w-]{43}$/, 'must look like cca_admin_<43 characters>').optional(),
  joinToken: z.string().regex(/^cca_join_[\w-]{43}$/, 'must look like cca_join_<43 characters>').optional(),
  workers: z.coerce.number().int().min(0).max(64).default(4),
  poolSize: z.coerce.number().int().min(2).max(200).default(10),
  mirrorMib: z.coerce.number().int().min(0).max(65_536).default(512),
  noMigrate: z.boolean().default(false),
  leaderTtlSeconds: z.coerce.number().int().min(1).max(300).default(10),
  drainSeconds: z.coerce.number().min(0).max(300).default(1),
  secretKey: z.string().min(1).optional(),
  secretKeyFile: z.string().min(1).optional(),
  tlsCert: z.string().min(1).optional(),
  tlsKey: z.string().min(1).optional(),
  maxStreams: z.coerce.number().int().min(1).max(100_000).default(defaultLimits.streamsPerToken),
  maxNodeStreams: z.coerce.number().int().min(4).max(100_000).default(defaultLimits.streamsPerNode),
  nodeWriteRate: z.coerce.number().min(0.1).max(1_000_000).default(defaultLimits.nodeWrites.ratePerSecond),
  nodeWriteBurst: z.coerce.number().int().min(1).max(10_000_000).default(defaultLimits.nodeWrites.burst),
  logLevel: z.string().min(1).optional(),
  logFormat: z.string().min(1).optional(),
  peerNetworks: peerNetworksSchema.optional(),
}).refine((c) => (c.tlsCert === undefined) === (c.tlsKey === undefined), {
  // Both or neither: a certificate without its key (or the reverse) cannot serve HTTPS,
  // and silently serving plain HTTP instead would hand out tokens in clear text.
  message: '--tls-cert and --tls-key go together: give both (HTTPS) or neither (HTTP)',
  path: ['tls'],
});

export type ServerFlags = z.output<typeof configSchema>;

export const serverUsage = `usage: cca server [--store URL | --database-url URL] [--port N] [--host ADDR] [--tls-cert FILE --tls-key FILE] [--open-reads] [--workers N] [--pool-size N] [--mirror-mib N] [--no-migrate] [--leader-ttl S]

  --store URL         memory:, sqlite:./file.db, postgres://user:pass@host:port/db, or etcd://host:port/prefix  (env CCA_STORE)
                      (TLS: postgres://…?sslmode=verify-full&sslrootcert=FILE, etcd+https://host:port/prefix?ca=FILE&cert=FILE&key=FILE)
  --database-url URL  the same as --store with a Postgres URL                                  (env DATABASE_URL)
  --port N            port to listen on, HTTP or HTTPS (default 7070)                           (env CCA_PORT)
  --host ADDR         address to listen on (default 127.0.0.1)                                  (env CCA_HOST)
  --tls-cert FILE     serve HTTPS with this PEM certificate chain (needs --tls-key)             (env CCA_TLS_CERT)
  --tls-key FILE      the certificate's PEM private key (needs --tls-cert)                      (env CCA_TLS_KEY)
  --open-reads        anonymous requests get the reader role (reads and watch, secrets redacted) (env CCA_OPEN_READS=1)
  --workers N         controller steps this pod runs at once; 0 = API only                     (env CCA_WORKERS)
  --pool-size N       Postgres: the store's connections (one for writes, the rest for reads; default 10, at least 2) (env CCA_POOL_SIZE)
                      a pod opens at most pool-size + 1 (LISTEN) + workers + 4 (graphile-worker) connections
  --mirror-mib N      Postgres: memory for the pod's copy of the state its steps and requests read (default 512; 0 = none: they read the database) (env CCA_MIRROR_MIB)
  --no-migrate        Postgres, SQLite: apply no migration; refuse a schema that is behind (run \`cca migrate\`) (env CCA_NO_MIGRATE=1)
  --leader-ttl S      etcd: the leader election's lease TTL; a dead leader is replaced within it (env CCA_LEADER_TTL, default 10)
  --drain-seconds S   on SIGTERM, /readyz fails this long before the pod stops listening; requests in flight then get 10 s (env CCA_DRAIN_SECONDS, default 1)
  --max-streams N     watch streams and long polls one token may hold open on this pod (anonymous callers share one allowance) (env CCA_MAX_STREAMS, default 64)
  --max-node-streams N the same for one node's credential                                     (env CCA_MAX_NODE_STREAMS, default 16)
  --node-write-rate N observations and events one node may write per second on this pod     (env CCA_NODE_WRITE_RATE, default 50)
  --node-write-burst N  and at once after a quiet spell                                       (env CCA_NODE_WRITE_BURST, default 1000)
  --peer-networks CIDR,...  networks agents' advertised peer addresses may lie in, besides the address each registers from (env CCA_PEER_NETWORKS, default 127.0.0.0/8,::1/128)
  --secret-key-file F keys sealing secret values at rest, ID:BASE64 per line, newest first   (env CCA_SECRET_KEY_FILE, or the keys in CCA_SECRET_KEY)
  --log-level L       trace, debug, info, warn, error or fatal (env CCA_LOG_LEVEL, default info)
  --log-format F      json (one object a line on stdout) or pretty (default: pretty on a terminal, else json) (env CCA_LOG_FORMAT)
  env CCA_ADMIN_TOKEN, CCA_JOIN_TOKEN: install these tokens instead of generating them`;

export function serverConfig(argv: string[], env: NodeJS.ProcessEnv): ServerFlags {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv,
      options: {
        store: { type: 'string' },
        'database-url': { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        'open-reads': { type: 'boolean' },
        workers: { type: 'string' },
        'pool-size': { type: 'string' },
        'mirror-mib': { type: 'string' },
        'no-migrate': { type: 'boolean' },
        'leader-ttl': { type: 'string' },
        'secret-key-file': { type: 'string' },
        'drain-seconds': { type: 'string' },
        'peer-networks': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        'max-streams': { type: 'string' },
        'max-node-streams': { type: 'string' },
        'node-write-rate': { type: 'string' },
        'node-write-burst': { type: 'string' },
        'log-level': { type: 'string' },
        'log-format': { type: 'string' },
      },
      strict: true,
    }).values;
  } catch (e) {
    throw new CcaError('CCA-E0603', { where: 'the command line', reason: `${messageOf(e)}\n${serverUsage}` });
  }
  const raw = {
    store: values.store ?? values['database-url'] ?? env.CCA_STORE ?? env.DATABASE_URL,
    port: values.port ?? env.CCA_PORT,
    host: values.host ?? env.CCA_HOST,
    openReads: values['open-reads'] ?? (env.CCA_OPEN_READS === '1' || env.CCA_OPEN_READS === 'true'),
    adminToken: env.CCA_ADMIN_TOKEN || undefined,
    joinToken: env.CCA_JOIN_TOKEN || undefined,
    workers: values.workers ?? env.CCA_WORKERS,
    poolSize: values['pool-size'] ?? env.CCA_POOL_SIZE,
    mirrorMib: values['mirror-mib'] ?? (env.CCA_MIRROR_MIB || undefined),
    noMigrate: values['no-migrate'] ?? (env.CCA_NO_MIGRATE === '1' || env.CCA_NO_MIGRATE === 'true'),
    leaderTtlSeconds: values['leader-ttl'] ?? env.CCA_LEADER_TTL,
    drainSeconds: values['drain-seconds'] ?? env.CCA_DRAIN_SECONDS,
    secretKey: env.CCA_SECRET_KEY || undefined,
    secretKeyFile: values['secret-key-file'] ?? (env.CCA_SECRET_KEY_FILE || undefined),
    tlsCert: values['tls-cert'] ?? (env.CCA_TLS_CERT || undefined),
    tlsKey: values['tls-key'] ?? (env.CCA_TLS_KEY || undefined),
    maxStreams: values['max-streams'] ?? (env.CCA_MAX_STREAMS || undefined),
    maxNodeStreams: values['max-node-streams'] ?? (env.CCA_MAX_NODE_STREAMS || undefined),
    nodeWriteRate: values['node-write-rate'] ?? (env.CCA_NODE_WRITE_RATE || undefined),
    nodeWriteBurst: values['node-write-burst'] ?? (env.CCA_NODE_WRITE_BURST || undefined),
    logLevel: values['log-level'] ?? (env.CCA_LOG_LEVEL || undefined),
    logFormat: values['log-format'] ?? (env.CCA_LOG_FORMAT || undefined),
    peerNetworks: values['peer-networks'] ?? (env.CCA_PEER_NETWORKS || undefined),
  };
  const r = configSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new CcaError('CCA-E0603', { where: `the server setting ${i.path.join('.')}`, reason: i.message });
  }
  return r.data;
}

/** The pod limits the flags set, over the defaults (handlers/deps.ts). */
export function limitsOf(flags: Pick<ServerFlags, 'maxStreams' | 'maxNodeStreams' | 'nodeWriteRate' | 'nodeWriteBurst'>): ServerLimits {
  return {
    ...defaultLimits,
    streamsPerToken: flags.maxStreams,
    streamsPerNode: flags.maxNodeStreams,
    nodeWrites: { ratePerSecond: flags.nodeWriteRate, burst: flags.nodeWriteBurst },
  };
}
