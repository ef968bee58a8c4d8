import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CcaError } from '../../core/diagnostics/index.js';

export interface ContainerdDaemon {
  address: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Start a private containerd with its root, state and socket under `dir` (the CRI plugin off).
 * Tests and `--containerd-start` use it; stop() signals exactly this pid and waits for it.
 */
export async function startContainerd(dir: string, bin = 'containerd'): Promise<ContainerdDaemon> {
  mkdirSync(dir, { recursive: true });
  const address = join(dir, 'containerd.sock');
  const config = join(dir, 'config.toml');
  writeFileSync(
    config,
    [
      'version = 2',
      `root = "${join(dir, 'root')}"`,
      `state = "${join(dir, 'state')}"`,
      'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
      '[grpc]',
      `  address = "${address}"`,
      '[debug]',
      '  level = "warn"',
      '',
    ].join('\n'),
  );
  const log = openSync(join(dir, 'containerd.log'), 'a');
  const child = spawn(bin, ['--config', config], { stdio: ['ignore', log, log], detached: true });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const spawnError = new Promise<Error>((resolve) => child.on('error', resolve));
  const deadline = Date.now() + 15_000;
  while (!existsSync(address)) {
    const failed = await Promise.race([spawnError, new Promise<undefined>((r) => setTimeout(() => r(undefined), 50))]);
    if (failed) throw new CcaError('CCA-E0507', { reason: `cannot start ${bin}: ${failed.message}` });
    if (child.exitCode !== null || Date.now() > deadline) throw new CcaError('CCA-E0507', { reason: `containerd did not come up (see ${join(dir, 'containerd.log')})` });
  }
  const pid = child.pid ?? 0;
  writeFileSync(join(dir, 'containerd.pid'), `${pid}\n`);
  child.unref();
  return {
    address,
    pid,
    async stop() {
      if (child.exitCode !== null) return;
      process.kill(pid, 'SIGTERM');
      const t = setTimeout(() => child.exitCode === null && process.kill(pid, 'SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}
