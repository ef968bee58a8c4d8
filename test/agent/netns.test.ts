import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, test } from 'vitest';
import { NetnsManager } from '../../agent/netns.js';
import { renderPolicy } from '../../agent/nft.js';
import { linksWith, namespacesWith, probe } from './netns-support.js';
import { tempDir } from './support.js';
import { needs } from '../support/prerequisites.js';

const can = needs('netns');
const prefix = `tn${(process.pid % 36 ** 4).toString(36)}`;
const cidr = `10.231.${process.pid % 250}.0/24`;

describe.runIf(can)('network namespaces the agent creates, policies applied with nft', () => {
  const tmp = tempDir('netns');
  const net = new NetnsManager({ prefix, cidr, dir: tmp.dir });
  let server: ChildProcess | undefined;
  afterAll(async () => {
    server?.kill('SIGKILL');
    for (const r of ['srv-1', 'api-1', 'oth-1']) await net.teardown(r);
    try {
      execFileSync('ip', ['link', 'del', net.bridge], { stdio: 'ignore' });
    } catch {
      // already gone
    }
    tmp.cleanup();
  });

  test('default deny before the rules, then exactly the allowed client; a policy change keeps the server running', async () => {
    await net.checkTools();
    const policed = { network: { allow: [{ service: 'api', port: 'http' }] }, ports: [{ name: 'http', container: 8080, protocol: 'tcp' as const }] };
    const open = { network: { allow: [] }, ports: [] };
    const srv = await net.setup('srv-1', policed);
    const api = await net.setup('api-1', open);
    const oth = await net.setup('oth-1', open);
    expect(new Set([srv.address, api.address, oth.address]).size).toBe(3);
    expect(srv.ports).toEqual({ http: 8080 });
    expect(namespacesWith(prefix).sort()).toEqual([`${prefix}-api-1`, `${prefix}-oth-1`, `${prefix}-srv-1`]);

    const js = "require('net').createServer((s)=>{s.on('error',()=>{});s.end('hi');}).listen(8080,'0.0.0.0')";
    server = spawn('nsenter', [`--net=${net.netnsPath('srv-1')}`, '--', process.execPath, '-e', js], { stdio: 'ignore' });
    const pid = server.pid;
    // The node itself (the agent's probes) always gets through; wait for the server to listen.
    for (let i = 0; i < 50 && !(await probe(undefined, srv.address, 8080, 300)); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await probe(undefined, srv.address, 8080)).toBe(true);
    // The fallback of a policed service: nothing but the node until the rules arrive.
    expect(await probe(net.netnsPath('api-1'), srv.address, 8080)).toBe(false);
    expect(await probe(net.netnsPath('oth-1'), srv.address, 8080)).toBe(false);

    await net.apply('srv-1', renderPolicy({ policy: 'allow', rules: [{ port: 8080, protocol: 'tcp', services: ['api'], from: [api.address] }] }, net.gateway));
    expect(await probe(net.netnsPath('api-1'), srv.address, 8080)).toBe(true);
    expect(await probe(net.netnsPath('oth-1'), srv.address, 8080)).toBe(false);
    // Open replicas accept anyone.
    const js2 = "require('net').createServer((s)=>{s.on('error',()=>{});s.end('hi');}).listen(9090,'0.0.0.0')";
    const other = spawn('nsenter', [`--net=${net.netnsPath('oth-1')}`, '--', process.execPath, '-e', js2], { stdio: 'ignore' });
    for (let i = 0; i < 50 && !(await probe(net.netnsPath('api-1'), oth.address, 9090, 300)); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await probe(net.netnsPath('api-1'), oth.address, 9090)).toBe(true);
    other.kill('SIGKILL');

    await net.apply('srv-1', renderPolicy({ policy: 'allow', rules: [{ port: 8080, protocol: 'tcp', services: ['api', 'other'], from: [api.address, oth.address] }] }, net.gateway));
    expect(await probe(net.netnsPath('oth-1'), srv.address, 8080)).toBe(true);
    expect(server.exitCode).toBeNull();
    expect(server.pid).toBe(pid);
    // A bad script is refused whole (CCA-E0527) and the rules in force stay.
    await expect(net.apply('srv-1', 'table inet cca {\n nonsense\n}\n')).rejects.toThrow(/CCA-E0527/);
    expect(await probe(net.netnsPath('oth-1'), srv.address, 8080)).toBe(true);
    expect(await probe(net.netnsPath('api-1'), srv.address, 9999)).toBe(false);

    // Teardown removes the namespace and the veth, and frees the address.
    server.kill('SIGKILL');
    await new Promise((r) => server!.once('exit', r));
    for (const r of ['srv-1', 'api-1', 'oth-1']) await net.teardown(r);
    expect(namespacesWith(prefix)).toEqual([]);
    expect(linksWith(prefix).filter((l) => l !== net.bridge)).toEqual([]);
    expect(net.all()).toEqual([]);
  }, 60_000);
});
