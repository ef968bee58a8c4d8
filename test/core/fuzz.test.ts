/**
 * Fuzzing the language. Per run (CCA_FUZZ_SCALE=1, what `npm test` and CI run) the parser
 * gets about 121,000 generated and mutated inputs: 60k token soups, 15k mutated fixture
 * services, 35k arbitrary strings, 5k soups and 2k generated files with comments through
 * the formatter, 3k mutated fixtures through the formatter, and 1,000 generated specs plus
 * 300 generated service sets printed with toCca and parsed back. CCA_FUZZ_SCALE=10 runs
 * ten times as many. fast-check prints the seed and the shrunk counterexample of any
 * failure; replay with CCA_FUZZ_SEED=<seed>.
 *
 * Time per input is bounded by counting, never by a clock: the parser reports its steps
 * (each consumes a token or leaves a loop) and they must stay within WORK_PER_CHAR per
 * input character; nesting is capped with a coded diagnostic, so no input recurses deeply.
 */
import fc from 'fast-check';
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { lookup, render } from '../../core/diagnostics/index.js';
import { format, formatSource, parse, parseWithStats, toCca, toCcaAll } from '../../core/lang/index.js';
import { validateService } from '../../core/model/index.js';
import { redactSpec } from '../../core/redact.js';
import type { ServiceSpec } from '../../core/model/index.js';
import { mutate, mutations, serviceInput, serviceSet, tokenSoup, validSyntax } from './support/arbitraries.js';
import { repoRoot } from './support/golden.js';

const SCALE = Number(process.env.CCA_FUZZ_SCALE ?? '1');
const SEED = process.env.CCA_FUZZ_SEED === undefined ? undefined : Number(process.env.CCA_FUZZ_SEED);
export const RUNS = {
  tokenSoup: 60_000 * SCALE,
  mutatedFixture: 15_000 * SCALE,
  arbitraryText: 35_000 * SCALE,
  roundTrip: 1_000 * SCALE,
  roundTripSet: 300 * SCALE,
  formatProperty: 3_000 * SCALE,
  formatSoup: 5_000 * SCALE,
  formatSyntax: 2_000 * SCALE,
};
const opts = (numRuns: number) => ({ numRuns, ...(SEED === undefined ? {} : { seed: SEED }) });

/** Parser steps per input character (plus one); linear work by construction, checked here. */
const WORK_PER_CHAR = 12;

const fixtures = readdirSync(resolve(repoRoot, 'fixtures'))
  .filter((f) => f.endsWith('.cca'))
  .map((f) => readFileSync(resolve(repoRoot, 'fixtures', f), 'utf8'));
/** Each fixture's services one by one: small seeds mutate and parse faster than whole files. */
const chunks = fixtures.flatMap((t) => t.split(/\n(?=service )/));
const seeds = [...fixtures, ...chunks];

let maxRatio = 0;

/** Everything a user can get from any input: coded, registered, user-blamed diagnostics with sane spans. */
function checkInput(text: string): void {
  const r = parseWithStats(text, 'fuzz.cca');
  const ratio = r.work / (text.length + 1);
  maxRatio = Math.max(maxRatio, ratio);
  if (ratio > WORK_PER_CHAR) throw new Error(`parser took ${r.work} steps for ${text.length} characters`);
  const lines = text.split('\n').length;
  if (r.diagnostics.length > 51) throw new Error(`${r.diagnostics.length} diagnostics`);
  for (const d of r.diagnostics) {
    if (!lookup(d.code)) throw new Error(`unregistered code ${d.code}`);
    if (d.blame !== 'user') throw new Error(`${d.code} (${d.blame}): ${d.message}`);
    if (!d.span || d.span.line < 1 || d.span.line > lines || d.span.col < 1) throw new Error(`${d.code} has a bad span ${JSON.stringify(d.span)}`);
    if (/\n\s+at |Error:/.test(d.message + d.fix)) throw new Error(`${d.code} leaks an error: ${d.message}`);
    render(d, 'verbose', { sources: new Map([['fuzz.cca', text]]) });
  }
  if (r.diagnostics.length === 0 && text.includes('service') === false && r.services.length > 0) throw new Error('services from nowhere');
}

describe('the parser never throws, never hangs, and reports only coded diagnostics', () => {
  test('the per-run budget is at least 100,000 inputs', () => {
    const parsed = RUNS.tokenSoup + RUNS.mutatedFixture + RUNS.arbitraryText + RUNS.roundTrip + RUNS.roundTripSet + RUNS.formatProperty + RUNS.formatSoup + RUNS.formatSyntax;
    expect(parsed).toBeGreaterThanOrEqual(100_000 * SCALE);
  });

  test(`${RUNS.tokenSoup} token soups`, () => {
    fc.assert(fc.property(tokenSoup, (t) => checkInput(t)), opts(RUNS.tokenSoup));
  });

  test(`${RUNS.mutatedFixture} mutated fixtures`, () => {
    fc.assert(fc.property(fc.constantFrom(...chunks), mutations, (seed, ms) => checkInput(mutate(seed, ms))), opts(RUNS.mutatedFixture));
  });

  test(`${RUNS.arbitraryText} arbitrary strings`, () => {
    fc.assert(fc.property(fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 40 })), (t) => checkInput(t)), opts(RUNS.arbitraryText));
  });

  test('pathological shapes stay within the work bound', () => {
    for (const t of [
      '['.repeat(100_000),
      '{'.repeat(100_000),
      `service a {${' port x {'.repeat(10_000)}`,
      '"'.repeat(50_001),
      '"""'.repeat(10_001),
      '/*'.repeat(50_000),
      'a '.repeat(50_000),
      '= '.repeat(50_000),
      `service a { image = "x" ${'require zone in ['.repeat(5_000)}`,
      `service a { command = [${'"x",'.repeat(50_000)}] }`,
      '\u{1F600}'.repeat(50_000),
    ]) {
      checkInput(t);
    }
    expect(maxRatio).toBeLessThanOrEqual(WORK_PER_CHAR);
    // Formatting is linear too: the flat form of each node is computed once.
    const deep = `service a { command = ${'['.repeat(31)}${']'.repeat(31)} }`;
    expect(format(format(deep))).toBe(format(deep));
  });
});

function roundTrip(spec: ServiceSpec): void {
  const text = toCca(spec, { secrets: 'include' });
  const r = parse(text, 'rt.cca', { existing: 'unchecked' });
  expect(r.diagnostics, text).toEqual([]);
  expect(r.services).toEqual([spec]);
  expect(format(text)).toBe(text);
  // The default print never carries a secret value, and loses nothing else.
  const shown = parse(toCca(spec), 'shown.cca', { existing: 'unchecked' }).services[0]!;
  expect(shown).toEqual(redactSpec(spec));
}

describe('round trips', () => {
  test(`${RUNS.roundTrip} generated specs: spec → text → spec`, () => {
    fc.assert(
      fc.property(serviceInput(), (input) => {
        const v = validateService(input);
        if (!v.ok) throw new Error(`generator made an invalid spec: ${JSON.stringify(v.issues)}`);
        roundTrip(v.value);
      }),
      opts(RUNS.roundTrip),
    );
  });

  test(`${RUNS.roundTripSet} generated service sets with after edges`, () => {
    fc.assert(
      fc.property(serviceSet, (inputs) => {
        const specs = inputs.map((i) => {
          const v = validateService(i);
          if (!v.ok) throw new Error(JSON.stringify(v.issues));
          return v.value;
        });
        const text = toCcaAll(specs, { secrets: 'include' });
        const r = parse(text, 'set.cca');
        expect(r.diagnostics).toEqual([]);
        expect(r.services).toEqual(specs);
      }),
      opts(RUNS.roundTripSet),
    );
  });

  const meaning = (t: string) => {
    const r = parse(t, 'm.cca');
    return { services: r.services, codes: r.diagnostics.map((d) => d.code).sort() };
  };
  const formatKeepsMeaning = (text: string) => {
    const f = formatSource(text);
    expect(format(f.text)).toBe(f.text);
    if (f.ok) expect(meaning(f.text)).toEqual(meaning(text));
  };

  test(`${RUNS.formatProperty} mutated fixtures: format is idempotent and keeps the meaning`, () => {
    fc.assert(fc.property(fc.constantFrom(...seeds), mutations, (seed, ms) => formatKeepsMeaning(mutate(seed, ms))), opts(RUNS.formatProperty));
  });

  test(`${RUNS.formatSoup} token soups (comments everywhere): format is idempotent and keeps the meaning`, () => {
    const wrapped = tokenSoup.map((t) => `service s {\n  image = "x"\n  env = { ${t} }\n  command = [${t}]\n  ${t}\n}\n`);
    fc.assert(fc.property(fc.oneof(tokenSoup, wrapped), formatKeepsMeaning), opts(RUNS.formatSoup));
  });

  test(`${RUNS.formatSyntax} generated files with comments in every place: format keeps meaning and comments`, () => {
    const comments = (t: string) => (t.match(/# note|\/\/ note|\/\* note \*\/|\/\* two\n lines \*\//g) ?? []).length;
    fc.assert(
      fc.property(validSyntax, (text) => {
        const f = formatSource(text);
        expect(f.diagnostics).toEqual([]);
        formatKeepsMeaning(text);
        expect(comments(f.text)).toBe(comments(text));
      }),
      opts(RUNS.formatSyntax),
    );
  });
});
