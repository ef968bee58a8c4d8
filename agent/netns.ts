import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CcaError } from '../core/diagnostics/index.js';
import type { ServiceSpec } from '../core/model/index.js';
import { fallbackPolicy, renderPolicy } from './nft.js';

export interface NetnsOptions {
  /** Short, unique per agent on a machine (at most 8 of [a-z0-9]): names the bridge, veths and namespaces. */
  prefix: string;
  /** The node's replica network, a /24 such as 10.88.1.0/24: .1 is the bridge, .2–.254 replicas. */
  cidr: string;
  /** Where allocations are remembered across agent restarts. */
  dir: string;
}

/** One replica's network: its namespace, its host-side veth, its address and declared ports. */
export interface ReplicaNet {
  replica: string;
  netns: string;
  veth: string;
  address: string;
  ports: Record<string, number>;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { timeout: 10_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 127) : 0;
      resolve({ code, stdout, stderr: stderr || (err && code === 127 ? err.message : '') });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Parse a /24 (the only size offered: one bridge, 253 replicas per node). */
export function parseCidr(cidr: string): { base: string; gateway: string } {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.0\/24$/.exec(cidr);
  if (!m || [m[1], m[2], m[3]].some((x) => Number(x) > 255)) {
    throw new CcaError('CCA-E0508', { reason: `--network-cidr ${JSON.stringify(cidr)} must be a /24 such as 10.88.1.0/24` });
  }
  const base = `${m[1]}.${m[2]}.${m[3]}`;
  return { base, gateway: `${base}.1` };
}

export function checkPrefix(prefix: string): string {
  if (!/^[a-z][a-z0-9]{0,7}$/.test(prefix)) throw new CcaError('CCA-E0508', { reason: `--network-prefix ${JSON.stringify(prefix)} must be 1 to 8 lowercase letters and digits, starting with a letter` });
  return prefix;
}

/** A default prefix from the node's name, so two agents on one machine do not collide. */
export function defaultPrefix(node: string): string {
  return `c${createHash('sha256').update(node).digest('hex').slice(0, 5)}`;
}

/**
 * Network namespaces for the process runtime: a bridge per agent (`<prefix>br`, the /24's .1),
 * and per replica a namespace (`<prefix>-<replica>`), a veth pair (`<prefix><hash>` on the
 * bridge, `eth0` inside), an address, a default route via the bridge, and the agent's nft
 * table (default deny when the service has a policy) before the workload starts. Addresses
 * are handed out round-robin, so a released one is reused as late as possible.
 */
export class NetnsManager {
  readonly gateway: string;
  private readonly base: string;
  private chain: Promise<unknown> = Promise.resolve();
  private bridgeReady = false;

  constructor(readonly opts: NetnsOptions) {
    checkPrefix(opts.prefix);
    const c = parseCidr(opts.cidr);
    this.base = c.base;
    this.gateway = c.gateway;
    mkdirSync(opts.dir, { recursive: true });
  }

  get bridge(): string {
    return `${this.opts.prefix}br`;
  }

  /** CCA-E0525 unless ip, nsenter and nft are there and usable (root, CAP_NET_ADMIN). */
  async checkTools(): Promise<void> {
    for (const [tool, args] of [['ip', ['netns', 'list']], ['nsenter', ['--version']], ['nft', ['--version']]] as const) {
      const r = await run(tool, [...args]);
      if (r.code !== 0) throw new CcaError('CCA-E0525', { tool, reason: (r.stderr || r.stdout).trim().split('\n')[0] || `exit ${r.code}` });
    }
    if (typeof process.getuid === 'function' && process.getuid() !== 0) throw new CcaError('CCA-E0525', { tool: 'root', reason: 'the agent does not run as root' });
  }

  /** Serialise changes: allocations and link names must not race. */
  private serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.chain.then(f, f);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async must(replica: string, file: string, args: string[], input?: string): Promise<string> {
    const r = await run(file, args, input);
    if (r.code !== 0) throw new CcaError('CCA-E0526', { replica, reason: `${file} ${args.join(' ')}: ${(r.stderr || r.stdout).trim() || `exit ${r.code}`}` });
    return r.stdout;
  }

  private async ensureBridge(replica: string): Promise<void> {
    if (this.bridgeReady) return;
    if ((await run('ip', ['link', 'show', this.bridge])).code !== 0) await this.must(replica, 'ip', ['link', 'add', this.bridge, 'type', 'bridge']);
    await this.must(replica, 'ip', ['addr', 'replace', `${this.gateway}/24`, 'dev', this.bridge]);
    await this.must(replica, 'ip', ['link', 'set', this.bridge, 'up']);
    // Replicas of agents on other bridges (other nodes on this machine) are reached through the host.
    try {
      writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
    } catch {
      // read-only /proc/sys: same-node traffic still works
    }
    this.bridgeReady = true;
  }

  netnsName(replica: string): string {
    return `${this.opts.prefix}-${replica}`;
  }

  netnsPath(replica: string): string {
    return `/var/run/netns/${this.netnsName(replica)}`;
  }

  private vethName(replica: string): string {
    return `${this.opts.prefix}${createHash('sha256').update(replica).digest('hex').slice(0, 6)}`;
  }

  private file(replica: string): string {
    return join(this.opts.dir, `${replica}.json`);
  }

  info(replica: string): ReplicaNet | undefined {
    try {
      return JSON.parse(readFileSync(this.file(replica), 'utf8')) as ReplicaNet;
    } catch {
      return undefined;
    }
  }

  /** Every replica network this agent set up (its files), for cleanup and adoption. */
  all(): ReplicaNet[] {
    return readdirSync(this.opts.dir)
      .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
      .map((f) => this.info(f.slice(0, -5)))
      .filter((x): x is ReplicaNet => x !== undefined);
  }

  private allocate(): string {
    const used = new Set(this.all().map((n) => n.address));
    const cursorFile = join(this.opts.dir, '.next');
    let next = Number(existsSync(cursorFile) ? readFileSync(cursorFile, 'utf8') : '2') || 2;
    for (let i = 0; i < 253; i++) {
      const host = ((next - 2 + i) % 253) + 2;
      const address = `${this.base}.${host}`;
      if (used.has(address)) continue;
      writeFileSync(cursorFile, String((host - 1) % 253 + 2));
      return address;
    }
    throw new CcaError('CCA-E0528', { cidr: this.opts.cidr, used: used.size });
  }

  /** The replica's namespace, ready before its workload starts; re-used if it is already there. */
  setup(replica: string, spec: Pick<ServiceSpec, 'network' | 'ports'>): Promise<ReplicaNet> {
    return this.serial(async () => {
      await this.ensureBridge(replica);
      const known = this.info(replica);
      if (known && existsSync(this.netnsPath(replica))) {
        await this.applyNow(replica, renderPolicy(fallbackPolicy(spec), this.gateway));
        return known;
      }
      if (known) await this.teardownNow(replica);
      const net: ReplicaNet = {
        replica,
        netns: this.netnsName(replica),
        veth: this.vethName(replica),
        address: this.allocate(),
        ports: Object.fromEntries(spec.ports.map((p) => [p.name, p.container])),
      };
      const tmp = join(this.opts.dir, `.${replica}.tmp`);
      writeFileSync(tmp, JSON.stringify(net));
      renameSync(tmp, this.file(replica));
      try {
        const ns = ['-n', net.netns];
        await this.must(replica, 'ip', ['netns', 'add', net.netns]);
        await this.must(replica, 'ip', ['link', 'add', net.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', net.netns]);
        await this.must(replica, 'ip', ['link', 'set', net.veth, 'master', this.bridge, 'up']);
        await this.must(replica, 'ip', [...ns, 'addr', 'add', `${net.address}/24`, 'dev', 'eth0']);
        await this.must(replica, 'ip', [...ns, 'link', 'set', 'lo', 'up']);
        await this.must(replica, 'ip', [...ns, 'link', 'set', 'eth0', 'up']);
        await this.must(replica, 'ip', [...ns, 'route', 'add', 'default', 'via', this.gateway]);
        await this.applyNow(replica, renderPolicy(fallbackPolicy(spec), this.gateway));
      } catch (e) {
        await this.teardownNow(replica);
        throw e;
      }
      return net;
    });
  }

  /** Replace the replica's nft table in one transaction (CCA-E0527 when nft refuses; the old rules stay). */
  apply(replica: string, script: string): Promise<void> {
    return this.serial(() => this.applyNow(replica, script));
  }

  private async applyNow(replica: string, script: string): Promise<void> {
    const r = await run('nsenter', [`--net=${this.netnsPath(replica)}`, '--', 'nft', '-f', '-'], script);
    if (r.code !== 0) throw new CcaError('CCA-E0527', { replica, netns: this.netnsName(replica), reason: (r.stderr || r.stdout).trim() || `exit ${r.code}` });
  }

  /** Remove the replica's namespace and veth, and free its address. */
  teardown(replica: string): Promise<void> {
    return this.serial(() => this.teardownNow(replica));
  }

  private async teardownNow(replica: string): Promise<void> {
    const net = this.info(replica);
    await run('ip', ['netns', 'del', net?.netns ?? this.netnsName(replica)]);
    await run('ip', ['link', 'del', net?.veth ?? this.vethName(replica)]);
    rmSync(this.file(replica), { force: true });
  }

  /** The command line that runs `argv` inside the replica's namespace (network only; same files). */
  wrap(replica: string, argv: string[]): string[] {
    return ['nsenter', `--net=${this.netnsPath(replica)}`, '--', ...argv];
  }
}
