import { readFileSync, statSync } from 'node:fs';
import { CcaError, messageOf } from '../core/diagnostics/index.js';
import { capacityOf, RESERVE, type Capacity, type MachineFacts } from './capacity.js';
import { FENCE } from './core/fence.js';
import { QUORUM } from '../core/model/quorum.js';
import { NODE_REPLICAS } from '../core/model/node.js';
import { LOOPBACK_NETWORKS, peerNetworksSchema, type Cidr } from '../core/model/peer-address.js';
import { readMachine } from './machine.js';
import { readCaFile } from './https.js';
import type { RuntimeName } from './runtime.js';

/** Everything `cca agent` takes, from flags, CCA_* environment variables and an optional JSON config file. */
export interface AgentFlags {
  server: string;
  /** PEM of the CA that signed the server's certificate (--ca FILE), read at start. */
  ca?: string;
  node: string;
  token: string;
  runtime: RuntimeName;
  stateDir: string;
  address: string;
  zone: string;
  labels: Record<string, string>;
  taints: string[];
  cpuMillis: number;
  memoryBytes: number;
  /** Replicas the scheduler places here at most (NODE_REPLICAS). */
  maxReplicas: number;
  leaseTtlSeconds: number;
  containerdAddress: string;
  containerdStart: boolean;
  namespace: string;
  imagesDir: string;
  tini: string;
  /** Registries (host:port) the containerd runtime pulls from over plain HTTP. */
  insecureRegistries: string[];
  /** host: replicas share the node's network; netns: each in its own namespace, policies enforced. */
  network: 'host' | 'netns';
  networkCidr: string;
  networkPrefix: string;
  /** Cap of each workload output file (agent/logfile.ts). */
  logMaxBytes: number;
  /** Rotated files kept per output stream beside the current one. */
  logFiles: number;
  /** Cap of all workload output on the node: the oldest rotated files go first (agent/log-budget.ts). */
  logMaxTotal: number;
  /** Below this much free space in the state directory the node reports `disk full` (CCA-E0570); 0: only failed writes. */
  diskMinFree: number;
  /** host:port of the peer endpoint (docs/fencing.md); port 0 picks one. */
  peerListen: string;
  /** host:port peers are told to use; '' = the address the endpoint listens on. */
  peerAdvertise: string;
  /** host:port of the Prometheus endpoint (agent/metrics.ts); '' = none. */
  metricsListen: string;
  /** --log-level / --log-format as given ('' = the default, settled with core/log-settings.ts). */
  logLevel: string;
  logFormat: string;
  /** Networks peers' advertised addresses may lie in besides their registration source (docs/security.md). */
  peerNetworks: Cidr[];
  help: boolean;
}

export const USAGE = `usage: cca agent --server URL --node NAME [--token-file FILE] [options]

  --server URL             the ccattler server (CCA_SERVER)
  --ca FILE                PEM CA certificate to trust for an https:// server, in addition
                           to the system's (CCA_CA)
  --node NAME              this node's name
  --token-file FILE        file holding the join token, mode 0600 (CCA_TOKEN_FILE); used to
                           enroll while the node has no credential, not needed once enrolled
  --token TOKEN            the join token itself (CCA_TOKEN; prefer the file or the variable:
                           other users of the machine see flags in the process list)
  --runtime R              fake | process | containerd (default process)
  --state-dir DIR          agent state (default /var/lib/ccattler/agent/<node>)
  --address ADDR           where replicas on this node are reached (default 127.0.0.1)
  --zone Z                 zone (default "default")
  --label K=V              node label, repeatable
  --taint T                node taint ("key" or "key=value"), repeatable
  --cpu N                  declared CPU: cores ("4") or millicores ("3500m") (default: detected, see below)
  --memory Q               declared memory: bytes or 512Mi / 8Gi (default: detected)
  --max-replicas N         replicas placed here at most, 1 to ${NODE_REPLICAS.max} (default ${NODE_REPLICAS.default})
  --lease-ttl S            lease TTL in seconds (default ${QUORUM.defaultTtlSeconds}, at least ${FENCE.minTtlSeconds}; below 28
                           peers cannot confirm a control-plane outage in time: docs/fencing.md)
  --peer-listen HOST:PORT  where peers ask whether this node reaches the control plane
                           (default 127.0.0.1:0: loopback, any free port)
  --peer-advertise H:P     the address peers are told (default: the --peer-listen address); an IP
                           address the server accepts: this node's source address or in its --peer-networks
  --peer-networks CIDR,..  peers are asked only at their own registration address or inside these
                           networks (default 127.0.0.0/8,::1/128; give the server's --peer-networks)
  --metrics-listen H:P     serve Prometheus metrics at http://H:P/metrics (default: off;
                           docs/observability.md)
  --log-level L            trace, debug, info, warn, error or fatal (CCA_LOG_LEVEL, default info)
  --log-format F           json or pretty, on stderr (CCA_LOG_FORMAT; default pretty on a
                           terminal, else json)
  --config FILE            JSON file with any of these settings (flags win)
  --containerd-address P   containerd socket (default /run/containerd/containerd.sock)
  --containerd-start       start a private containerd under the state directory
  --namespace NS           containerd namespace (default cca-<node>)
  --images DIR             image catalogue directory (default fixtures/images/out)
  --tini PATH              static tini mounted as PID 1 (default /usr/bin/tini-static)
  --insecure-registry H    a registry (host or host:port) the containerd runtime pulls from
                           over plain HTTP, e.g. a registry on loopback; repeatable
  --network M              host | netns: each replica in its own network namespace with its
                           own address, network policies enforced (process or containerd
                           runtime; default host)
  --network-cidr C         the node's replica network, a /24 (default 10.88.0.0/24; give each
                           agent on one machine its own)
  --network-prefix P       names of the bridge, veths and namespaces (default from the node name)
  --log-max-bytes Q        cap of each replica output file, bytes or 512Ki / 10Mi (default
                           10Mi); a stream holds at most (1 + --log-files) times this
  --log-files N            rotated files kept per output stream, 1 to 9 (default 1)
  --log-max-total Q        cap of all replica output on the node (default 1Gi): past it the
                           oldest rotated files are deleted, never a current one
  --disk-min-free Q        below this much free space in the state directory the node reports
                           disk full (CCA-E0570) and takes no new placements (default 64Mi;
                           0: only a failed write counts)

Capacity: without --cpu / --memory the agent declares what the machine offers it (the CPU
count and physical memory, or less under the cgroup quota or memory limit it runs in,
cgroup v1 or v2) minus a reserve for itself, the runtime and the system: the larger of
${RESERVE.cpuMillis}m and ${RESERVE.cpuFraction * 100} % of the CPU, the larger of 256Mi and ${RESERVE.memoryFraction * 100} % of the memory.
`;

const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };

function bad(reason: string): never {
  throw new CcaError('CCA-E0508', { reason });
}

export function parseBytes(text: string, flag = '--memory'): number {
  const m = /^(\d+(?:\.\d+)?)(k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(text.trim());
  if (!m) bad(`${flag} ${JSON.stringify(text)} is not a size like 8Gi or 512Mi`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? '']!);
}

export function parseCpu(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(m)?$/.exec(text.trim());
  if (!m) bad(`--cpu ${JSON.stringify(text)} is not cores ("4") or millicores ("3500m")`);
  return Math.round(m[2] ? Number(m[1]) : Number(m[1]) * 1000);
}

const MULTI = new Set(['label', 'taint', 'insecure-registry']);
const BOOL = new Set(['containerd-start', 'help']);

/** Flags into `--name value` pairs; repeatable ones collect. */
function scan(argv: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) bad(`unexpected argument ${JSON.stringify(arg)}`);
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const value = BOOL.has(name) ? (inline ?? 'true') : (inline ?? argv[++i]);
    if (value === undefined) bad(`--${name} needs a value`);
    out.set(name, [...(MULTI.has(name) ? (out.get(name) ?? []) : []), value]);
  }
  return out;
}

/**
 * `--cpu` / `--memory` override the capacity detected from the machine and the agent's
 * cgroup minus the reserve (agent/capacity.ts); `machine` is read only when one is missing.
 */
export function parseAgentFlags(argv: string[], env: NodeJS.ProcessEnv = process.env, machine: () => MachineFacts = readMachine): AgentFlags {
  const flags = scan(argv);
  const configFile = flags.get('config')?.[0];
  const config = configFile ? (JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>) : {};
  const get = (name: string, fallback = ''): string => flags.get(name)?.[0] ?? (config[name] === undefined ? fallback : String(config[name]));
  const known = new Set(['server', 'ca', 'node', 'token', 'token-file', 'runtime', 'state-dir', 'address', 'zone', 'label', 'taint', 'cpu', 'memory', 'max-replicas', 'lease-ttl', 'config', 'containerd-address', 'containerd-start', 'namespace', 'images', 'tini', 'insecure-registry', 'network', 'network-cidr', 'network-prefix', 'log-max-bytes', 'log-files', 'log-max-total', 'disk-min-free', 'peer-listen', 'peer-advertise', 'peer-networks', 'metrics-listen', 'log-level', 'log-format', 'help']);
  for (const name of flags.keys()) if (!known.has(name)) bad(`unknown flag --${name}`);
  const help = get('help') === 'true';
  const node = get('node');
  const server = get('server', env.CCA_SERVER ?? '');
  if (!help && node === '') bad('--node is required');
  if (!help && server === '') bad('--server is required (or CCA_SERVER)');
  const caFile = get('ca', env.CCA_CA ?? '');
  const runtime = get('runtime', 'process');
  if (!['fake', 'process', 'containerd'].includes(runtime)) bad(`--runtime must be fake, process or containerd, not ${JSON.stringify(runtime)}`);
  const network = get('network', 'host');
  if (network !== 'host' && network !== 'netns') bad(`--network must be host or netns, not ${JSON.stringify(network)}`);
  if (network === 'netns' && runtime === 'fake') bad('--network netns needs --runtime process or containerd (the fake runtime runs nothing)');
  const ttl = Number(get('lease-ttl', String(QUORUM.defaultTtlSeconds)));
  if (!Number.isInteger(ttl) || ttl < FENCE.minTtlSeconds) bad(`--lease-ttl must be a whole number of seconds, at least ${FENCE.minTtlSeconds}`);
  const labels: Record<string, string> = { ...((config.labels as Record<string, string> | undefined) ?? {}) };
  for (const l of flags.get('label') ?? []) {
    const [k, v] = l.split(/=(.*)/s, 2);
    if (!k || v === undefined) bad(`--label ${JSON.stringify(l)} must be key=value`);
    labels[k] = v;
  }
  const maxReplicas = Number(get('max-replicas', String(NODE_REPLICAS.default)));
  if (!Number.isInteger(maxReplicas) || maxReplicas < 1 || maxReplicas > NODE_REPLICAS.max) bad(`--max-replicas must be a whole number from 1 to ${NODE_REPLICAS.max}`);
  const cpuText = get('cpu');
  const memoryText = get('memory');
  let capacity: Capacity | undefined;
  const detected = (): Capacity => (capacity ??= capacityOf(machine()));
  return {
    server,
    ...(caFile !== '' && !help ? { ca: readCaFile(caFile) } : {}),
    node,
    token: joinToken(get('token', env.CCA_TOKEN ?? ''), get('token-file', env.CCA_TOKEN_FILE ?? '')),
    runtime: runtime as RuntimeName,
    stateDir: get('state-dir', `/var/lib/ccattler/agent/${node}`),
    address: get('address', '127.0.0.1'),
    zone: get('zone', 'default'),
    labels,
    taints: [...((config.taints as string[] | undefined) ?? []), ...(flags.get('taint') ?? [])],
    cpuMillis: cpuText !== '' ? parseCpu(cpuText) : detected().cpuMillis,
    memoryBytes: memoryText !== '' ? parseBytes(memoryText) : detected().memoryBytes,
    maxReplicas,
    leaseTtlSeconds: ttl,
    containerdAddress: get('containerd-address', '/run/containerd/containerd.sock'),
    containerdStart: get('containerd-start') === 'true',
    namespace: get('namespace', `cca-${node}`),
    imagesDir: get('images', 'fixtures/images/out'),
    tini: get('tini', '/usr/bin/tini-static'),
    insecureRegistries: insecureRegistries(flags.get('insecure-registry') ?? [], config['insecure-registry']),
    network,
    networkCidr: get('network-cidr', '10.88.0.0/24'),
    networkPrefix: get('network-prefix', ''),
    logMaxBytes: logCap(get('log-max-bytes', '10Mi')),
    logFiles: logFiles(get('log-files', '1')),
    logMaxTotal: parseBytes(get('log-max-total', '1Gi'), '--log-max-total'),
    diskMinFree: parseBytes(get('disk-min-free', '64Mi'), '--disk-min-free'),
    peerListen: hostPort(get('peer-listen', '127.0.0.1:0'), '--peer-listen'),
    peerAdvertise: get('peer-advertise') === '' ? '' : hostPort(get('peer-advertise'), '--peer-advertise'),
    metricsListen: get('metrics-listen'),
    logLevel: get('log-level', env.CCA_LOG_LEVEL ?? ''),
    logFormat: get('log-format', env.CCA_LOG_FORMAT ?? ''),
    peerNetworks: peerNetworks(get('peer-networks', LOOPBACK_NETWORKS.join(','))),
    help,
  };
}

function peerNetworks(text: string): Cidr[] {
  const r = peerNetworksSchema.safeParse(text);
  if (!r.success) bad(`--peer-networks: ${r.error.issues[0]!.message}`);
  return r.data;
}

function hostPort(text: string, flag: string): string {
  if (!/^(\[[0-9a-fA-F:.]+\]|[a-zA-Z0-9.-]+):\d{1,5}$/.test(text) || Number(text.slice(text.lastIndexOf(':') + 1)) > 65535) bad(`${flag} ${JSON.stringify(text)} must be host:port`);
  return text;
}

/** `--insecure-registry` flags, then the config file's list; each a host with an optional port. */
function insecureRegistries(flags: string[], fromConfig: unknown): string[] {
  const listed = Array.isArray(fromConfig) ? fromConfig.map(String) : typeof fromConfig === 'string' ? [fromConfig] : [];
  const all = [...flags, ...listed];
  for (const r of all) if (!/^[a-zA-Z0-9.-]+(:\d+)?$/.test(r)) bad(`--insecure-registry ${JSON.stringify(r)} must be a host or host:port`);
  return [...new Set(all)];
}

/** At least 4 KiB: a smaller cap would rotate on every line of a chatty workload. */
function logCap(text: string): number {
  const n = parseBytes(text, '--log-max-bytes');
  if (n < 4096) bad(`--log-max-bytes ${text} is below 4Ki`);
  return n;
}

/** 1 to 9: `.1` … `.9` beside each output file. */
function logFiles(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 9) bad(`--log-files ${JSON.stringify(text)} must be a whole number from 1 to 9`);
  return n;
}

/**
 * The join token from --token / CCA_TOKEN, or read from --token-file / CCA_TOKEN_FILE. A
 * file others may read is refused, as the CLI refuses such a config file: the token
 * enrolls any node that has no credential yet.
 */
function joinToken(given: string, file: string): string {
  if (file === '') return given;
  if (given !== '') bad('give the join token once: --token (CCA_TOKEN) or --token-file (CCA_TOKEN_FILE), not both');
  let mode: number;
  let text: string;
  try {
    mode = statSync(file).mode;
    text = readFileSync(file, 'utf8');
  } catch (e) {
    bad(`--token-file ${file} cannot be read: ${messageOf(e)}`);
  }
  if ((mode & 0o077) !== 0) bad(`--token-file ${file} may be read by others (mode ${(mode & 0o777).toString(8)}): chmod 600 it`);
  const token = text.trim();
  if (token === '') bad(`--token-file ${file} is empty`);
  return token;
}
