import { expect, test } from 'vitest';
import { commands } from '../../cli/commands.js';
import { globalFlags } from '../../cli/globals.js';
import { acceptedOptions } from '../../cli/parse.js';
import { allDiagnostics } from '../../core/diagnostics/index.js';
import { rawUsage } from './raw-usage.js';

/** Every `cca …` a diagnostic's cause or fix tells the user to run, as written (placeholders included). */
function mentions(text: string): string[] {
  return [...text.matchAll(/`cca ([^`]*)`/g)].map((m) => m[1]!);
}

const placeholder = (w: string) => w.includes('{') || /^[A-Z]+$/.test(w);

/** Why `cca <line>` would not run as written, or undefined when the command, verb and flags exist. */
async function problemOf(line: string): Promise<string | undefined> {
  const [cmd, ...rest] = line.split(/\s+/);
  if (!cmd || placeholder(cmd)) return undefined; // the command itself is filled in at run time
  const entry = commands[cmd];
  if (!entry) return `there is no command "cca ${cmd}" (cli/commands.ts)`;
  const mod = await entry.load();
  // The verbs a command takes: the first word of each form of its usage, when it is a list of literal words.
  const verbs = mod.spec.usage.join(' | ')
    .split(' | ')
    .map((form) => form.replace(/^cca \S+\s*/, '').split(/\s+/)[0] ?? '')
    .filter((t) => /^[a-z][a-z|-]*$/.test(t))
    .flatMap((t) => t.split('|'));
  const first = rest[0];
  if (verbs.length > 0 && first !== undefined && !first.startsWith('-') && !placeholder(first) && !verbs.includes(first)) {
    return `"cca ${cmd}" takes ${verbs.join('|')}, not "${first}" (usage: ${mod.spec.usage.join(' | ')})`;
  }
  for (const w of rest.filter((x) => x.startsWith('-'))) {
    const flag = w.replace(/^-+/, '').split('=')[0]!;
    if (w.startsWith('--') && flag in globalFlags) continue;
    if (mod.spec.raw) {
      if (!rawUsage(cmd).includes(`--${flag}`)) return `"cca ${cmd}" has no flag --${flag}`;
      continue;
    }
    const options = acceptedOptions(mod.spec);
    const known = w.startsWith('--') ? flag in options : Object.values(options).some((o) => o.short === flag);
    if (!known) return `"cca ${cmd}" has no flag ${w} (usage: ${mod.spec.usage.join(' | ')})`;
  }
  return undefined;
}

test('every `cca …` a diagnostic tells the user to run names a real command, verb and flags', async () => {
  const seen: string[] = [];
  const problems: string[] = [];
  for (const d of allDiagnostics()) {
    for (const line of [...mentions(d.cause), ...mentions(d.fix)]) {
      seen.push(line);
      const p = await problemOf(line);
      if (p) problems.push(`${d.code}: \`cca ${line}\`: ${p}`);
    }
  }
  expect(problems).toEqual([]);
  // The check reads the texts it should: dozens of commands are mentioned.
  expect(seen.length).toBeGreaterThan(30);
});

test('the check refuses a command, a verb or a flag that does not exist', async () => {
  expect(await problemOf('restart web')).toBe('there is no command "cca restart" (cli/commands.ts)');
  expect(await problemOf('node evict n1')).toMatch(/^"cca node" takes reset\|cordon\|uncordon\|drain\|remove, not "evict"/);
  expect(await problemOf('get replicas --all')).toMatch(/^"cca get" has no flag --all/);
  expect(await problemOf('agent --nodes x')).toBe('"cca agent" has no flag --nodes');
  expect(await problemOf('why node {node}')).toBeUndefined();
  expect(await problemOf('get replicas -o wide')).toBeUndefined();
});
