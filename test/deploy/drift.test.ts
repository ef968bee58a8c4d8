import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, test } from 'vitest';
import { parseAgentFlags } from '../../agent/options.js';
import { commands } from '../../cli/commands.js';
import { serverConfig, type ServerFlags } from '../../server/config.js';
import { testApp } from '../handlers/harness.js';
import { makeTestCa } from '../support/tls-certs.js';

/**
 * deploy/ must not drift from the code (issue #18): every `cca` command, flag and CCA_*
 * variable the Dockerfile, the Kubernetes manifests and the systemd units use is accepted by
 * `cca server` (server/config.ts), `cca agent` (agent/options.ts) or `cca migrate`; every
 * container port, Service target and probe matches the server's port and routes; every file
 * flag points into a mounted volume; every secret key referenced exists.
 */


const root = path.resolve(import.meta.dirname, '..', '..');
const deploy = path.join(root, 'deploy');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'cca-drift-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Values a real deployment would give, valid for the parsers (files exist where the agent reads them). */
const ca = makeTestCa(tmp);
const tokenFile = path.join(tmp, 'join-token');
writeFileSync(tokenFile, `cca_join_${'j'.repeat(43)}\n`);
chmodSync(tokenFile, 0o600);
const SAMPLE: Record<string, string> = {
  CCA_STORE: 'postgres://u:p@db:5432/cca',
  CCA_ADMIN_TOKEN: `cca_admin_${'a'.repeat(43)}`,
  CCA_JOIN_TOKEN: `cca_join_${'j'.repeat(43)}`,
  CCA_SERVER: 'https://ccattler.example:443',
  NODE_IP: '10.0.0.11',
};
const sample = (name: string): string => SAMPLE[name] ?? `sample-${name.toLowerCase()}`;

interface Invocation {
  where: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** `--flag=value` and `--flag value` alike: the flag names. */
const flagsOf = (args: string[]) => args.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0]!);


/** serverConfig on the invocation, recording which environment variables it reads. */
function serverOf(inv: Invocation): { flags: ServerFlags; read: Set<string> } {
  const read = new Set<string>();
  const env = new Proxy(inv.env, { get: (t, k: string) => (read.add(k), t[k]) });
  return { flags: serverConfig(inv.args, env), read };
}

function agentOf(inv: Invocation): Set<string> {
  const read = new Set<string>();
  const env = new Proxy(inv.env, { get: (t, k: string) => (read.add(k), t[k]) });
  // Files the agent reads at start are replaced by real ones of the same kind.
  const args = inv.args.map((a, i) => (inv.args[i - 1] === '--ca' ? ca.cert : inv.args[i - 1] === '--token-file' ? tokenFile : a));
  parseAgentFlags(args, env, () => ({ cpus: 4, memoryBytes: 8 * 2 ** 30, cgroup: {} }) as never);
  return read;
}

// ---- reading deploy/ ----

interface Container {
  where: string;
  spec: Record<string, any>; // a Kubernetes container, as parsed YAML
  pod: Record<string, any>;
  labels: Record<string, string>;
}

const manifests = readdirSync(path.join(deploy, 'kubernetes'))
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(path.join(deploy, 'kubernetes', f), 'utf8')).map((d) => ({ file: f, doc: d.toJS() as Record<string, any> })));
const ofKind = (kind: string) => manifests.filter((m) => m.doc.kind === kind);
const containers: Container[] = manifests.flatMap(({ file, doc }) =>
  (doc.spec?.template?.spec?.containers ?? []).map((c: Record<string, any>) => ({ where: `${file} ${doc.kind}/${doc.metadata.name} ${c.name}`, spec: c, pod: doc.spec.template.spec, labels: doc.spec.template.metadata?.labels ?? {} })),
);

function k8sInvocation(c: Container): Invocation {
  const env: Record<string, string> = {};
  for (const e of c.spec.env ?? []) env[e.name] = e.value ?? sample(e.name);
  const args = (c.spec.args as string[]).map((a) => a.replace(/\$\((\w+)\)/g, (_, v: string) => env[v] ?? `$(${v})`));
  return { where: c.where, command: args[0]!, args: args.slice(1), env };
}

/** `ExecStart*=` lines of the systemd units: the `cca` word, its command and arguments. */
function systemdInvocations(): Invocation[] {
  const dir = path.join(deploy, 'systemd');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.service'))
    .flatMap((unit) => {
      const text = readFileSync(path.join(dir, unit), 'utf8');
      const envFile = /^EnvironmentFile=-?(.+)$/m.exec(text)?.[1];
      const example = envFile ? path.join(dir, `${path.basename(envFile)}.example`) : undefined;
      const env: Record<string, string> = {};
      for (const line of example ? readFileSync(example, 'utf8').split('\n') : []) {
        const m = /^([A-Z_][A-Z0-9_]*)=/.exec(line);
        if (m) env[m[1]!] = sample(m[1]!);
      }
      return [...text.matchAll(/^ExecStart(?:Pre)?=(.+)$/gm)].map((m) => {
        const words = m[1]!.replace(/\$\{(\w+)\}/g, (_, v: string) => env[v] ?? `\${${v}}`).replaceAll('%H', 'node1').trim().split(/\s+/);
        const at = words.findIndex((w) => path.basename(w) === 'cca');
        expect(at, `${unit}: ${m[0]}`).toBeGreaterThanOrEqual(0);
        return { where: `${unit} ${m[0]!.split('=')[0]}`, command: words[at + 1]!, args: words.slice(at + 2), env };
      });
    });
}

function dockerfile(): { entrypoint: string[]; cmd: string[]; expose: number[] } {
  const text = readFileSync(path.join(deploy, 'Dockerfile'), 'utf8');
  const json = (k: string) => JSON.parse(new RegExp(`^${k} (\\[.*\\])$`, 'm').exec(text)?.[1] ?? '[]') as string[];
  return { entrypoint: json('ENTRYPOINT'), cmd: json('CMD'), expose: [...text.matchAll(/^EXPOSE (\d+)$/gm)].map((m) => Number(m[1])) };
}

const docker = dockerfile();
const invocations: Invocation[] = [
  ...containers.map(k8sInvocation),
  ...systemdInvocations(),
  { where: 'Dockerfile CMD', command: docker.cmd[0]!, args: docker.cmd.slice(1), env: {} },
];

// ---- the checks ----

describe('deploy/ uses only what cca accepts', () => {
  test('deploy/ was read: the server, the migration and the agent are all there', () => {
    const kinds = invocations.map((i) => i.command);
    expect(kinds.filter((c) => c === 'server').length).toBeGreaterThanOrEqual(3);
    expect(kinds).toContain('migrate');
    expect(kinds).toContain('agent');
    expect(docker.entrypoint).toEqual(['cca']);
    for (const kind of ['Deployment', 'Job', 'Secret', 'PodDisruptionBudget', 'Service']) expect(ofKind(kind).length, kind).toBeGreaterThan(0);
  });

  test('every command exists in cca', () => {
    for (const inv of invocations) {
      expect(Object.keys(commands), inv.where).toContain(inv.command);
    }
  });

  test('every `cca server` flag and CCA_* variable is accepted by server/config.ts', () => {
    for (const inv of invocations.filter((i) => i.command === 'server')) {
      const { read } = serverOf(inv);
      for (const name of Object.keys(inv.env).filter((n) => n.startsWith('CCA_') || n === 'DATABASE_URL')) expect([...read], `${inv.where} sets ${name}`).toContain(name);
    }
  });

  test('`cca migrate` takes the store as the server does', () => {
    for (const inv of invocations.filter((i) => i.command === 'migrate')) {
      expect(flagsOf(inv.args), inv.where).toEqual(['--store']);
      expect(serverConfig(inv.args, {}).store, inv.where).toMatch(/^postgres:\/\//);
    }
  });

  test('every `cca agent` flag and CCA_* variable is accepted by agent/options.ts', () => {
    for (const inv of invocations.filter((i) => i.command === 'agent')) {
      const read = agentOf(inv);
      for (const name of Object.keys(inv.env).filter((n) => n.startsWith('CCA_'))) expect([...read], `${inv.where} sets ${name}`).toContain(name);
    }
  });

  test('every variable of a systemd environment file is read by cca or used in the unit', () => {
    for (const inv of invocations.filter((i) => i.where.endsWith('.service ExecStart'))) {
      const used = inv.command === 'server' ? serverOf(inv).read : agentOf(inv);
      const unit = readFileSync(path.join(deploy, 'systemd', inv.where.split(' ')[0]!), 'utf8');
      for (const name of Object.keys(inv.env)) expect(used.has(name) || unit.includes(`\${${name}}`), `${inv.where}: ${name}`).toBe(true);
    }
  });
});

describe('ports, probes, secrets and mounts match the server', () => {
  const server = containers.filter((c) => k8sInvocation(c).command === 'server');

  test('the container port, the probes and the Service target are the port the server listens on; probes use HTTPS when it does', async () => {
    const { app } = testApp();
    for (const c of server) {
      const { flags } = serverOf(k8sInvocation(c));
      expect(c.spec.ports.map((p: { containerPort: number }) => p.containerPort), c.where).toEqual([flags.port]);
      for (const probe of [c.spec.readinessProbe, c.spec.livenessProbe]) {
        expect(probe.httpGet.port, c.where).toBe(flags.port);
        expect(probe.httpGet.scheme ?? 'HTTP', c.where).toBe(flags.tlsCert ? 'HTTPS' : 'HTTP');
        expect((await app.request(probe.httpGet.path)).status, `${c.where} probes ${probe.httpGet.path}`).toBe(200);
      }
      expect(c.spec.readinessProbe.httpGet.path).toBe('/readyz');
      const services = ofKind('Service').filter((svc) => Object.entries(svc.doc.spec.selector).every(([k, v]) => c.labels[k] === v));
      expect(services.length, `${c.where}: a Service selects it`).toBeGreaterThan(0);
      for (const svc of services) expect(svc.doc.spec.ports.map((p: { targetPort: number }) => p.targetPort), svc.doc.metadata.name).toEqual([flags.port]);
    }
    const cmd = serverOf({ where: 'Dockerfile', command: 'server', args: docker.cmd.slice(1), env: {} }).flags;
    expect(docker.expose).toEqual([cmd.port]);
  });

  test('the drain, the in-flight grace and the stop bound fit in the termination grace period', () => {
    for (const c of server) {
      const { flags } = serverOf(k8sInvocation(c));
      // server/run.ts: drain, then 10 s for requests in flight, then 10 s for the store and workers.
      expect(c.pod.terminationGracePeriodSeconds, c.where).toBeGreaterThanOrEqual(flags.drainSeconds + 20);
    }
  });

  test('every file flag points into a mounted volume, and every secret key referenced exists', () => {
    const secrets = new Map(ofKind('Secret').map((s) => [s.doc.metadata.name as string, Object.keys({ ...s.doc.stringData, ...s.doc.data })]));
    for (const c of containers) {
      const inv = k8sInvocation(c);
      const files = inv.command === 'server' ? (({ secretKeyFile, tlsCert, tlsKey }) => [secretKeyFile, tlsCert, tlsKey])(serverOf(inv).flags) : [];
      const mounts = (c.spec.volumeMounts ?? []) as { name: string; mountPath: string }[];
      for (const f of files.filter((x): x is string => x !== undefined)) {
        const mount = mounts.find((m) => f.startsWith(`${m.mountPath}/`));
        expect(mount, `${c.where}: ${f}`).toBeDefined();
        expect(c.pod.volumes.map((v: { name: string }) => v.name), c.where).toContain(mount!.name);
      }
      for (const e of c.spec.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef as { name: string; key: string } | undefined;
        if (ref) expect(secrets.get(ref.name) ?? [], `${c.where}: ${e.name}`).toContain(ref.key);
      }
    }
  });
});
