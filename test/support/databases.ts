import { inject } from 'vitest';
import { createDatabase } from './postgres-server.js';

/** A fresh, empty database on the shared test server, so files can run in parallel. */
export async function createTestDatabase(label = 't'): Promise<{ url: string; drop(): Promise<void> }> {
  return await createDatabase(inject('pgAdminUrl'), label);
}
