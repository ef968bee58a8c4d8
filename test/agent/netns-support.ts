import { execFileSync, spawn } from 'node:child_process';

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
