import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { SqliteStore } from '../../db/sqlite/store.js';
import { defineConformance } from './conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'cca-sqlite-conf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

defineConformance({ name: 'sqlite (file, WAL)', open: async () => SqliteStore.open(`sqlite:${join(dir, `s${n++}.db`)}`) });
defineConformance({ name: 'sqlite (:memory:)', open: async () => SqliteStore.open('sqlite::memory:') });
