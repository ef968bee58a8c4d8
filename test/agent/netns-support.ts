import { execFileSync, spawn } from 'node:child_process';

/**
 * Why this machine cannot run network-namespace tests, or undefined when it can: root (for
 * `ip netns add`, veth pairs and nft) and the three tools. In CI (`CI` set) a reason is a failure.
 */
export function netnsUnavailable(): string | undefined {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'not root: network namespaces, veth pairs and nftables need CAP_NET_ADMIN';
  for (const [tool, args] of [['ip', ['netns', 'list']], ['nsenter', ['--version']], ['nft', ['--version']]] as const) {
    try {
      execFileSync(tool, [...args], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed or not usable (apt-get install -y iproute2 util-linux nftables)`;
    }
  }
  return undefined;
}

/** Skip with a printed reason; in CI, fail instead. */
export function requireNetns(): boolean {
  const reason = netnsUnavailable();
  if (reason === undefined) return true;
  if (process.env.CI) throw new Error(`network namespace tests cannot run in CI: ${reason}`);
  process.stderr.write(`skipping network namespace tests: ${reason}\n`);
  return false;
}

/** A TCP connect from inside a namespace (`nsPath`), or from the host when undefined: true when it connected. */
export function probe(nsPath: string | undefined, host: string, port: number, timeoutMs = 1_500): Promise<boolean> {
  const js = `const s=require('net').connect({host:${JSON.stringify(host)},port:${port},timeout:${timeoutMs}});s.on('connect',()=>process.exit(0));s.on('error',()=>process.exit(1));s.on('timeout',()=>process.exit(2));`;
  const argv = [process.execPath, '-e', js];
  const [file, ...args] = nsPath ? ['nsenter', `--net=${nsPath}`, '--', ...argv] : argv;
  return new Promise((resolve) => {
    const p = spawn(file!, args, { stdio: 'ignore' });
    p.on('exit', (code) => resolve(code === 0));
    p.on('error', () => resolve(false));
  });
}

/** Every network namespace whose name starts with `prefix-`. */
export function namespacesWith(prefix: string): string[] {
  const out = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  return out.split('\n').map((l) => l.split(' ')[0]!).filter((n) => n.startsWith(`${prefix}-`));
}

/** Links whose names start with `prefix`. */
export function linksWith(prefix: string): string[] {
  const out = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  return out.split('\n').map((l) => l.split(': ')[1]?.split('@')[0] ?? '').filter((n) => n.startsWith(prefix));
}
