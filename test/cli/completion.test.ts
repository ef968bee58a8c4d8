import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { commands } from '../../cli/commands.js';
import { cca } from './harness.js';
import { needs } from '../support/prerequisites.js';

const script = async (shell: string) => {
  const r = await cca(['completion', shell]);
  expect(r).toMatchObject({ code: 0, stderr: '' });
  return r.stdout;
};
const dir = mkdtempSync(join(tmpdir(), 'cca-completion-'));
const bash = join(dir, 'cca.bash');
writeFileSync(bash, await script('bash'));

/** Bash's own completion machinery: the function `complete -F` registered, with COMP_WORDS and COMP_CWORD set. */
function complete(...line: string[]): string[] {
  const driver = [
    `source ${JSON.stringify(bash)}`,
    'fn=$(complete -p cca | sed -E "s/.* -F ([^ ]+) .*/\\1/")',
    'COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))',
    '"$fn" cca "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  return execFileSync('bash', ['-c', driver, 'driver', ...line], { encoding: 'utf8', cwd: dir }).split('\n').filter(Boolean);
}


describe('cca completion', () => {
  test('bash: the script is valid bash (bash -n)', () => {
    const r = spawnSync('bash', ['-n', bash], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  test('bash: commands, flags, kinds for get, flag values, verbs', () => {
    expect(complete('cca', 'ge')).toEqual(['get']);
    expect(complete('cca', 'get', '--o')).toEqual(['--output']);
    expect(complete('cca', 'get', '')).toEqual(['services', 'replicas', 'nodes', 'endpoints', 'volumes']);
    expect(complete('cca', '--server', 'http://x', 'get', 'rep')).toEqual(['replicas']);
    expect(complete('cca', 'get', 'nodes', '-o', 'y')).toEqual(['yaml']);
    expect(complete('cca', 'token', 'create', '--role', 'a')).toEqual(['admin']);
    expect(complete('cca', 'config', 'use')).toEqual(['use-context']);
    // logs' -f is a switch: the replica after it is the argument, and --tail its flag.
    expect(complete('cca', 'logs', '-f', 'web-1', '--ta')).toEqual(['--tail']);
    expect(complete('cca', 'help', 'comp')).toEqual(['completion']);
    expect(complete('cca', 'completion', '')).toEqual(['bash', 'zsh', 'fish']);
  });

  test('zsh and fish: made from the same declarations', async () => {
    const zsh = await script('zsh');
    expect(zsh).toMatch(/^#compdef cca\n/);
    expect(zsh).toContain('bashcompinit');
    expect(zsh).toContain("get) flags='--watch -w --service'; words='services replicas nodes endpoints volumes'");
    const fish = await script('fish');
    for (const name of Object.keys(commands)) expect(fish).toContain(`-a ${name} -d `);
    expect(fish).toContain("complete -c cca -n '__fish_seen_subcommand_from get' -a 'services replicas nodes endpoints volumes'");
    expect(fish).toContain("complete -c cca -l output -s o -x -a 'plain wide json yaml name'");
  });

  // The shells are a prerequisite group: a machine without them fails here naming the package.
  for (const shell of ['zsh', 'fish']) {
    test.runIf(needs('shells'))(`${shell} -n accepts the ${shell} script`, async () => {
      const file = join(dir, `cca.${shell}`);
      writeFileSync(file, await script(shell));
      expect(spawnSync(shell, ['-n', file], { encoding: 'utf8' }).status).toBe(0);
    });
  }

  test('an unknown shell is a coded user error', async () => {
    const r = await cca(['completion', 'tcsh']);
    expect(r).toMatchObject({ code: 1, stderr: expect.stringContaining('error CCA-E0703: cca completion: the shells are bash, zsh and fish, not "tcsh"') });
  });
});
