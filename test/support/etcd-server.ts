import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CcaError } from '../../core/diagnostics/index.js';
import { freePort } from './postgres-server.js';

export interface RunningEtcd {
  /** Comma-separated client URLs, as ETCD_ENDPOINTS takes them. */
  endpoints: string;
  /** `host:port` of the first endpoint, for `etcd://host:port/prefix` URLs. */
  hostPort: string;
  /** True when this process started the server (it is then fresh: revision 1, nothing compacted). */
  owned: boolean;
  stop(): Promise<void>;
  /** Stop the server and start it again on the same ports and data (owned servers only), after `downMs`. */
  restart?(downMs?: number): Promise<void>;
}

export interface StartEtcdOptions {
  /** Ignore ETCD_ENDPOINTS and always start a private server (tests that need revision 1). */
  fresh?: boolean;
  /**
   * 'fast' (default): 10 ms heartbeat, 100 ms election, so the minimum lease TTL is 1 s.
   * 'default': etcd's own 100 ms / 1000 ms, minimum lease TTL 2 s.
   */
  raft?: 'fast' | 'default';
  /** Where the data dir goes; benchmarks put it on disk, as Postgres's, so both pay for fsync. */
  dataDirBase?: string;
  /**
   * Serve clients over TLS with this certificate (PEM files), and with `clientCa` require a
   * client certificate that CA signed (--client-cert-auth). Always a private server (`fresh`).
   * `probe` is a client certificate (from clientCa) for the health check.
   */
  tls?: { cert: string; key: string; clientCa?: string; ca: string; probe?: { cert: string; key: string } };
}

function findBinary(name: string): string | undefined {
  if (name.includes('/')) return existsSync(name) ? name : undefined;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

function hostPortOf(endpoint: string): string {
  const u = new URL(endpoint.includes('://') ? endpoint : `http://${endpoint}`);
  return u.host;
}

async function canConnect(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port }, () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** GET /health over TLS, trusting `ca` and showing the probe's client certificate. */
function httpsHealth(port: number, tls: NonNullable<StartEtcdOptions['tls']>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port, path: '/health', ca: readFileSync(tls.ca), ...(tls.probe ? { cert: readFileSync(tls.probe.cert), key: readFileSync(tls.probe.key) } : {}) },
      (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => {
          try {
            resolve(JSON.parse(text));
          } catch (e) {
            reject(e);
          }
        });
      },
    );
    req.on('error', reject);
  });
}

/** Ask /health until etcd has a leader and serves reads (a port that accepts is not enough). */
async function waitHealthy(child: ChildProcess, port: number, log: () => string, tls?: StartEtcdOptions['tls'], timeoutMs = 20_000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if (child.exitCode !== null) {
      throw new CcaError('CCA-E0120', { reason: `it exited with code ${child.exitCode}: ${log().slice(-400)}` });
    }
    if (await canConnect(port)) {
      try {
        const body = (tls ? await httpsHealth(port, tls) : await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { health?: string };
        if (body.health === 'true') return;
      } catch {
        // not ready yet
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new CcaError('CCA-E0120', { reason: `it was not healthy after ${timeoutMs} ms: ${log().slice(-400)}` });
}

/**
 * An etcd for tests: ETCD_ENDPOINTS if set (unless `fresh`), else the `etcd` binary on free
 * loopback ports with a temp data dir (on /dev/shm when there is one, so fsync is cheap),
 * stopped by its PID. Short raft timings let a 1 s lease TTL through unclamped.
 */
export async function startTestEtcd(opts: StartEtcdOptions = {}): Promise<RunningEtcd> {
  const given = process.env.ETCD_ENDPOINTS;
  if (given && !opts.fresh && !opts.tls) {
    const first = given.split(',')[0]!.trim();
    return { endpoints: given, hostPort: hostPortOf(first), owned: false, stop: async () => undefined };
  }
  const name = process.env.ETCD_BINARY ?? 'etcd';
  const binary = findBinary(name);
  if (!binary) throw new CcaError('CCA-E0119', { binary: name });
  const base = opts.dataDirBase ?? (existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir());
  const dir = await mkdtemp(path.join(base, 'cca-etcd-'));
  const clientPort = await freePort();
  let peerPort = await freePort();
  while (peerPort === clientPort) peerPort = await freePort();
  const client = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name=cca-test',
    `--data-dir=${path.join(dir, 'data')}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=cca-test=${peer}`,
    '--initial-cluster-state=new',
    // Minimum lease TTL is ceil(1.5 × election timeout); 10/100 ms makes it 1 s.
    ...(opts.raft === 'default' ? [] : ['--heartbeat-interval=10', '--election-timeout=100']),
    ...(opts.tls ? [`--cert-file=${opts.tls.cert}`, `--key-file=${opts.tls.key}`] : []),
    ...(opts.tls?.clientCa ? [`--trusted-ca-file=${opts.tls.clientCa}`, '--client-cert-auth'] : []),
    '--logger=zap',
    '--log-level=error',
    '--log-outputs=stderr',
  ];
  let proc: Launched;
  try {
    proc = await launch(binary, args, clientPort, opts.tls);
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  const onExit = () => proc.kill();
  process.once('exit', onExit);
  return {
    endpoints: client,
    hostPort: `127.0.0.1:${clientPort}`,
    owned: true,
    stop: async () => {
      process.off('exit', onExit);
      await proc.stop();
      await rm(dir, { recursive: true, force: true });
    },
    restart: async (downMs = 0) => {
      await proc.stop();
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      proc = await launch(binary, args, clientPort, opts.tls);
    },
  };
}

interface Launched {
  stop(): Promise<void>;
  kill(): void;
}

/** Start the binary and wait until it serves; stop it by its PID. */
async function launch(binary: string, args: string[], clientPort: number, tls?: StartEtcdOptions['tls']): Promise<Launched> {
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => {
    log = (log + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const killer = setTimeout(kill, 5_000);
      await exited;
      clearTimeout(killer);
    }
  };
  try {
    await waitHealthy(child, clientPort, () => log, tls);
  } catch (e) {
    await stop();
    throw e;
  }
  return { stop, kill };
}
