/**
 * What the test suite needs from the machine, in one place: the pre-test step
 * (`npm test` runs test/support/prerequisites-cli.ts first), `.ci/run` (which only calls
 * `npm test`) and every test that needs a tool (through `needs`) read this list.
 *
 * A missing prerequisite is a failure that names the package, never a silent skip. The one
 * way to leave a group out is to say so: `CCA_TEST_WITHOUT=containerd,netns npm test`; the
 * run then prints which groups were not exercised.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';

export type PrerequisiteGroup = 'etcd' | 'busybox' | 'containerd' | 'registry' | 'netns' | 'chromium' | 'pgbouncer' | 'tmpfs' | 'shells';

interface Tool {
  /** A command looked up on PATH, or an absolute path that must exist and be executable. */
  command: string;
  /** The Debian package that provides it. */
  pkg: string;
}

interface Group {
  why: string;
  tools: Tool[];
  /** The group needs root (namespaces, containerd). */
  root?: boolean;
}

export const GROUPS: Record<PrerequisiteGroup, Group> = {
  etcd: { why: 'the etcd store backend and the differential tests against a real etcd', tools: [{ command: 'etcd', pkg: 'etcd-server' }] },
  busybox: {
    why: 'busybox:* images on the process runtime (httpd, sh applets)',
    tools: [{ command: '/usr/bin/busybox', pkg: 'busybox-static' }],
  },
  containerd: {
    why: 'the containerd runtime and the images it runs',
    root: true,
    tools: [
      { command: 'containerd', pkg: 'containerd' },
      { command: 'ctr', pkg: 'containerd' },
      { command: 'runc', pkg: 'runc' },
      { command: 'umoci', pkg: 'umoci' },
      { command: '/usr/bin/busybox', pkg: 'busybox-static' },
      { command: '/usr/bin/tini-static', pkg: 'tini' },
    ],
  },
  registry: {
    why: 'images pulled from a registry: a local registry (plain HTTP, with and without htpasswd auth) the tests push the fixture images to',
    tools: [
      { command: 'docker-registry', pkg: 'docker-registry' },
      { command: 'skopeo', pkg: 'skopeo' },
      { command: 'htpasswd', pkg: 'apache2-utils' },
    ],
  },
  netns: {
    why: 'network policies: per-replica network namespaces, veth pairs and nftables',
    root: true,
    tools: [
      { command: 'ip', pkg: 'iproute2' },
      { command: 'nsenter', pkg: 'util-linux' },
      { command: 'nft', pkg: 'nftables' },
    ],
  },
  chromium: { why: 'the console in a real browser', tools: [{ command: 'chromium', pkg: 'chromium' }] },
  shells: { why: 'the zsh and fish completion scripts checked by the shells themselves', tools: [{ command: 'zsh', pkg: 'zsh' }, { command: 'fish', pkg: 'fish' }] },
  pgbouncer: { why: 'Postgres behind PgBouncer: transaction pooling refused, session pooling works', tools: [{ command: '/usr/sbin/pgbouncer', pkg: 'pgbouncer' }] },
  tmpfs: {
    why: 'a full disk: a small tmpfs mounted as an agent\'s state directory and filled',
    root: true,
    tools: [
      { command: 'mount', pkg: 'mount' },
      { command: 'umount', pkg: 'mount' },
    ],
  },
};

function onPath(command: string): boolean {
  if (command.startsWith('/')) {
    try {
      accessSync(command, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(`${dir}/${command}`)) return true;
  }
  return false;
}

const isRoot = (): boolean => process.getuid?.() === 0;

/** Why a group cannot run here (with what to install), or undefined when it can. */
export function missing(group: PrerequisiteGroup): string | undefined {
  const g = GROUPS[group];
  const absent = g.tools.filter((t) => !onPath(t.command));
  if (absent.length > 0) {
    const pkgs = [...new Set(absent.map((t) => t.pkg))];
    return `${absent.map((t) => t.command).join(', ')} not found (apt-get install -y ${pkgs.join(' ')})`;
  }
  if (g.root && !isRoot()) return 'needs root';
  if (group === 'netns') {
    try {
      execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
    } catch {
      return '`ip netns list` fails: network namespaces are not usable in this sandbox';
    }
  }
  return undefined;
}

/** Every Debian package any group needs that is not installed yet. */
export function missingPackages(groups: readonly PrerequisiteGroup[] = allGroups()): string[] {
  const pkgs = new Set<string>();
  for (const g of groups) for (const t of GROUPS[g].tools) if (!onPath(t.command)) pkgs.add(t.pkg);
  return [...pkgs];
}

export function allGroups(): PrerequisiteGroup[] {
  return Object.keys(GROUPS) as PrerequisiteGroup[];
}

/** Groups the run was told to leave out (`CCA_TEST_WITHOUT=a,b`); an unknown name is an error. */
export function excludedGroups(env: NodeJS.ProcessEnv = process.env): PrerequisiteGroup[] {
  const raw = (env.CCA_TEST_WITHOUT ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const known = new Set<string>(allGroups());
  const unknown = raw.filter((r) => !known.has(r));
  if (unknown.length > 0) throw new Error(`CCA_TEST_WITHOUT names unknown groups: ${unknown.join(', ')} (known: ${allGroups().join(', ')})`);
  // A green CI run must mean everything ran: leaving a group out is for a developer's machine.
  if (raw.length > 0 && env.CI) throw new Error(`CCA_TEST_WITHOUT (${raw.join(', ')}) is refused under CI=true: CI installs every prerequisite and runs every test`);
  return raw as PrerequisiteGroup[];
}

/**
 * For a test file: true when the group's tools are here. When they are not, the file fails
 * (this throws, naming the package), unless the run left the group out on purpose, in which
 * case the caller skips (describe.runIf) and the run's summary lists the group.
 */
export function needs(group: PrerequisiteGroup): boolean {
  if (excludedGroups().includes(group)) return false;
  const reason = missing(group);
  if (reason === undefined) return true;
  throw new Error(`prerequisite "${group}" (${GROUPS[group].why}) is missing: ${reason}. Run \`npm test\` as root on Debian to install it, or leave the group out with CCA_TEST_WITHOUT=${group}.`);
}
