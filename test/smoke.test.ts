import { expect, test } from 'vitest';
import { inject } from 'vitest';
import pg from 'pg';

test('the harness provides a working Postgres', async () => {
  const c = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await c.connect();
  const r = await c.query('select 1 as one');
  await c.end();
  expect(r.rows[0].one).toBe(1);
});
