import { parseArgs } from 'node:util';
import { z } from 'zod';
import { CcaError, messageOf } from '../core/diagnostics/index.js';
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
  leaderTtlSeconds: z.coerce.number().int().min(1).max(300).default(10),
  drainSeconds: z.coerce.number().min(0).max(300).default(1),
  secretKey: z.string().min(1).optional(),
  secretKeyFile: z.string().min(1).optional(),
  tlsCert: z.string().min(1).optional(),
  tlsKey: z.string().min(1).optional(),
  peerNetworks: peerNetworksSchema.optional(),
}).refine((c) => (c.tlsCert === undefined) === (c.tlsKey === undefined), {
  // Both or neither: a certificate without its key (or the reverse) cannot serve HTTPS,
  // and silently serving plain HTTP instead would hand out tokens in clear text.
  message: '--tls-cert and --tls-key go together: give both (HTTPS) or neither (HTTP)',
  path: ['tls'],
});

export type ServerFlags = z.output<typeof configSchema>;

export const serverUsage = `usage: cca server [--store URL | --database-url URL] [--port N] [--host ADDR] [--tls-cert FILE --tls-key FILE] [--open-reads] [--workers N] [--leader-ttl S]

  --store URL         memory:, sqlite:./file.db, postgres://user:pass@host:port/db, or etcd://host:port/prefix  (env CCA_STORE)
                      (TLS: postgres://…?sslmode=verify-full&sslrootcert=FILE, etcd+https://host:port/prefix?ca=FILE&cert=FILE&key=FILE)
  --database-url URL  the same as --store with a Postgres URL                                  (env DATABASE_URL)
  --port N            port to listen on, HTTP or HTTPS (default 7070)                           (env CCA_PORT)
  --host ADDR         address to listen on (default 127.0.0.1)                                  (env CCA_HOST)
  --tls-cert FILE     serve HTTPS with this PEM certificate chain (needs --tls-key)             (env CCA_TLS_CERT)
  --tls-key FILE      the certificate's PEM private key (needs --tls-cert)                      (env CCA_TLS_KEY)
  --open-reads        anonymous requests get the reader role (reads and watch, secrets redacted) (env CCA_OPEN_READS=1)
  --workers N         controller steps this pod runs at once; 0 = API only                     (env CCA_WORKERS)
  --leader-ttl S      etcd: the leader election's lease TTL; a dead leader is replaced within it (env CCA_LEADER_TTL, default 10)
  --drain-seconds S   on SIGTERM, /readyz fails this long before the pod stops listening; requests in flight then get 10 s (env CCA_DRAIN_SECONDS, default 1)
  --peer-networks CIDR,...  networks agents' advertised peer addresses may lie in, besides the address each registers from (env CCA_PEER_NETWORKS, default 127.0.0.0/8,::1/128)
  --secret-key-file F keys sealing secret values at rest, ID:BASE64 per line, newest first   (env CCA_SECRET_KEY_FILE, or the keys in CCA_SECRET_KEY)
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
        'leader-ttl': { type: 'string' },
        'secret-key-file': { type: 'string' },
        'drain-seconds': { type: 'string' },
        'peer-networks': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
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
    leaderTtlSeconds: values['leader-ttl'] ?? env.CCA_LEADER_TTL,
    drainSeconds: values['drain-seconds'] ?? env.CCA_DRAIN_SECONDS,
    secretKey: env.CCA_SECRET_KEY || undefined,
    secretKeyFile: values['secret-key-file'] ?? (env.CCA_SECRET_KEY_FILE || undefined),
    tlsCert: values['tls-cert'] ?? (env.CCA_TLS_CERT || undefined),
    tlsKey: values['tls-key'] ?? (env.CCA_TLS_KEY || undefined),
    peerNetworks: values['peer-networks'] ?? (env.CCA_PEER_NETWORKS || undefined),
  };
  const r = configSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new CcaError('CCA-E0603', { where: `the server setting ${i.path.join('.')}`, reason: i.message });
  }
  return r.data;
}
