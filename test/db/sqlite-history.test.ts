import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import { SqliteStore } from '../../db/sqlite/store.js';
import { generateHistory, rng, runOp, seedFromEnv } from './random-history.js';

const seed = seedFromEnv();
const HISTORIES = Number(process.env.CCA_HISTORIES ?? 25);
const LENGTH = 120;
const dir = mkdtempSync(join(tmpdir(), 'cca-sqlite-hist-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test(`random histories: SqliteStore answers exactly as MemoryStore (seed ${seed}, replay with CCA_SEED=${seed})`, async () => {
  console.log(`sqlite-history seed=${seed} (replay: CCA_SEED=${seed} npx vitest run test/db/sqlite-history.test.ts)`);
  for (let h = 0; h < HISTORIES; h++) {
    const next = rng(seed + h);
    const ops = generateHistory(next, LENGTH);
    const store = await SqliteStore.open(`sqlite:${join(dir, `h${h}.db`)}`);
    const ref = new MemoryStore();
    try {
      for (let i = 0; i < ops.length; i++) {
        const want = await runOp(ref, ops[i]!);
        const got = await runOp(store, ops[i]!);
        expect(got, `history ${h} (seed ${seed + h}) op ${i}: ${JSON.stringify(ops[i])}`).toEqual(want);
      }
    } finally {
      await store.close();
      await ref.close();
    }
  }
}, 180_000);
