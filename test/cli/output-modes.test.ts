import { describe, expect, test } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { cca, closedUrl, liveServers, seedNode } from './harness.js';

const open = liveServers();
const ESC = '\u001b[';

describe('-o json|yaml|wide|name, consistent across commands', () => {
  test('get and query: YAML is the JSON listing; name is KIND/NAME lines', async () => {
    const live = await open();
    await seedNode(live.store, 'n1', 'a', 2_000);
    await seedNode(live.store, 'n2', 'b', 2_000);
    const json = JSON.parse((await live.run(['get', 'nodes', '-o', 'json'])).stdout);
    const yaml = await live.run(['get', 'nodes', '-o', 'yaml']);
    expect(yaml.code).toBe(0);
    expect(yaml.stdout).toMatch(/^kind: nodes\nrevision: \d+\nitems:\n  - name: n1\n/);
    expect(parseYaml(yaml.stdout)).toEqual(json);
    expect(await live.run(['get', 'nodes', '-o', 'name'])).toMatchObject({ code: 0, stdout: 'node/n1\nnode/n2\n' });
    expect((await live.run(['get', 'nodes', 'n2', '-o', 'name'])).stdout).toBe('node/n2\n');
    expect((await live.run(['get', 'services', '-o', 'name'])).stdout).toBe('');
    const qJson = JSON.parse((await live.run(['query', 'nodes', 'zone=a', '-o', 'json'])).stdout);
    const qYaml = (await live.run(['query', 'nodes', 'zone=a', '-o', 'yaml'])).stdout;
    expect(qYaml).toMatch(/^kind: node\nrevision: \d+\n/);
    expect(parseYaml(qYaml)).toEqual(qJson);
    expect((await live.run(['query', 'nodes', '-o', 'name'])).stdout).toBe('nodes/n1\nnodes/n2\n');
    expect((await live.run(['token', 'list', '-o', 'yaml'])).stdout).toMatch(/^revision: \d+\ntokens:\n/);
  });

  test('a mode a command does not take is refused, naming the ones it does; errors follow -o yaml', async () => {
    const r = await cca(['why', 'node', 'n1', '-o', 'name']);
    expect(r).toMatchObject({ code: 1, stderr: 'error CCA-E0703: cca why: --output must be plain, json, yaml, not "name"\n  fix: usage: cca why … -o plain|json|yaml\n' });
    expect((await cca(['get', 'nodes', '-o', 'table'])).stderr).toContain('--output must be plain, wide, json, yaml, name, not "table"');
    const down = await cca(['get', 'nodes', '--server', await closedUrl(), '-o', 'yaml']);
    expect(down.code).toBe(2);
    expect(parseYaml(down.stderr)).toMatchObject({ error: { code: 'CCA-E0701', blame: 'environment' } });
  });
});

describe('colour: only on a terminal, never with NO_COLOR or --no-color', () => {
  test('the apply diff (ctx.color, which every renderer takes)', async () => {
    const live = await open();
    await seedNode(live.store, 'n1', 'a', 2_000);
    const dry = ['apply', 'test/cli/files/web.cca', '--dry-run'];
    expect((await live.run(dry, { stdoutIsTTY: true })).stdout).toContain(`${ESC}32m+ service web`);
    expect((await live.run(dry, { stdoutIsTTY: false })).stdout).not.toContain(ESC);
    expect((await live.run(dry, { stdoutIsTTY: true, env: { NO_COLOR: '1' } })).stdout).not.toContain(ESC);
    expect((await live.run([...dry, '--no-color'], { stdoutIsTTY: true })).stdout).not.toContain(ESC);
  });
});
