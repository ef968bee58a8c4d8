import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { z } from 'zod';

/** Seconds each slow test file took in a full run (test/support/record-durations.ts writes it). */
export const DURATIONS_FILE = new URL('./durations.json', import.meta.url);

const durationsSchema = z.record(z.string(), z.number().nonnegative());

/** The recorded durations; none when the file is missing or unreadable (then vitest's own order stands). */
export function recordedDurations(): Record<string, number> {
  try {
    return durationsSchema.parse(JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')));
  } catch {
    return {};
  }
}

/**
 * Longest files first. A fresh clone has no vitest cache, so vitest orders by file size and a
 * 100-s demo file could start last and run alone at the end (a full run here: the last 100 s
 * on one of the two workers). The recorded durations put the long files first; the rest keep
 * vitest's order (its cache's durations when there is one, else size) after them.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const durations = recordedDurations();
    const root = this.ctx.config.root;
    const seconds = (f: TestSpecification) => durations[relative(root, f.moduleId)] ?? 0;
    return [...base].sort((a, b) => seconds(b) - seconds(a));
  }
}
