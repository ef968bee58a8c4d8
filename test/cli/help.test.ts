import { describe, expect, test } from 'vitest';
import { commands } from '../../cli/commands.js';
import { globalFlags } from '../../cli/globals.js';
import { acceptedOptions, parseLine } from '../../cli/parse.js';
import type { Flags } from '../../cli/spec.js';
import { rawUsage } from './raw-usage.js';
import { cca } from './harness.js';

/** A command line as a shell splits it (single quotes only: that is all the examples use). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

const modules = await Promise.all(Object.entries(commands).map(async ([name, e]) => ({ name, summary: e.summary, spec: (await e.load()).spec })));

describe('every command declares its flags and examples, and the parser agrees', () => {
  test.each(modules.filter((m) => !m.spec.raw).map((m) => [m.name, m] as const))('cca %s', (name, { spec }) => {
    // The parser accepts exactly the global flags and the declared ones (and the reverse).
    const accepted = Object.keys(acceptedOptions(spec)).sort();
    expect(accepted).toEqual([...new Set([...Object.keys(globalFlags), ...Object.keys(spec.flags)])].sort());
    for (const [flag, f] of Object.entries({ ...globalFlags, ...spec.flags } as Flags)) {
      expect(f.description.length, `--${flag} has a description`).toBeGreaterThan(5);
      const given = f.type === 'string' ? [`--${flag}`, f.choices?.[0] ?? 'x'] : [`--${flag}`];
      expect(() => parseLine(name, spec, given), `--${flag} parses`).not.toThrow();
      if (f.short) expect(() => parseLine(name, spec, [`-${f.short}`, ...given.slice(1)]), `-${f.short} parses`).not.toThrow();
    }
    expect(() => parseLine(name, spec, ['--no-such-flag'])).toThrow();
    // Every example is this command, and parses.
    expect(spec.examples.length).toBeGreaterThan(0);
    for (const e of spec.examples) {
      const [cmd, sub, ...rest] = words(e.line);
      expect([cmd, sub]).toEqual(['cca', name]);
      expect(() => parseLine(name, spec, rest), e.line).not.toThrow();
    }
  });

  test('commands with their own flags (server, agent, migrate, store): their examples name flags their own usage lists', () => {
    for (const m of modules.filter((x) => x.spec.raw)) {
      const usage = rawUsage(m.name);
      for (const e of m.spec.examples) {
        for (const w of words(e.line).filter((x) => x.startsWith('--'))) expect(usage, `${e.line}: ${w}`).toContain(w);
      }
    }
  });

  test('`cca COMMAND --help` and `cca help COMMAND` print the same text, with every flag, its default and env, and the examples', async () => {
    for (const m of modules.filter((x) => !x.spec.raw)) {
      const a = await cca([m.name, '--help']);
      const b = await cca(['help', m.name]);
      expect(a).toMatchObject({ code: 0, stderr: '' });
      expect(b.stdout).toBe(a.stdout);
      expect(a.stdout).toContain(`cca ${m.name}: ${m.summary}`);
      for (const [flag, f] of Object.entries(m.spec.flags)) {
        const line = a.stdout.split('\n').find((l) => l.includes(`--${flag}`) && l.includes(f.description));
        expect(line, `--${flag} described`).toBeDefined();
        if (f.default) expect(line).toContain(`default: ${f.default}`);
        if (f.env) expect(line).toContain(`env ${f.env}`);
      }
      for (const e of m.spec.examples) expect(a.stdout).toContain(`  ${e.line}\n`);
    }
  });

  test('`cca help` lists every command and every global flag with its env', async () => {
    const r = await cca(['help']);
    for (const name of Object.keys(commands)) expect(r.stdout).toMatch(new RegExp(`^  ${name} +${commands[name]!.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    for (const [flag, f] of Object.entries(globalFlags)) {
      expect(r.stdout).toContain(`--${flag}`);
      if ('env' in f) expect(r.stdout).toContain(`env ${f.env}`);
    }
    expect((await cca(['help', 'nope'])).stderr).toContain('CCA-E0703');
  });
});
