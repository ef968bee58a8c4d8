import * as fs from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentClient, ServerError } from '../../agent/client.js';
import { DESIRED_FORMAT, parseDesired } from '../../agent/desired-file.js';
import { HttpControlPlane } from '../../agent/control-plane.js';
import { Enrollment, ENROLL_BACKOFF, reenrollDelayMs } from '../../agent/core/index.js';
import { KEEP_BAD_DESIRED, StateDir, type StateIo } from '../../agent/state.js';
import { makeDiagnostic, type Diagnostic } from '../../core/diagnostics/index.js';
import { assignmentSchema, serviceSpecSchema } from '../../core/model/index.js';
import { tempDir } from './support.js';

/**
 * The agent's recovery paths, piece by piece (docs/agent.md, "Recovery"): each way a cached
 * desired state can be bad, the state directory's failed writes, and which refusals of the
 * credential start a re-enrollment. End to end: recovery.test.ts, outage-e2e.test.ts.
 */
const spec = serviceSpecSchema.parse({ name: 'web', image: 'busybox:1.35', command: ['httpd', '-f'] });
const assignment = (replica: string) => assignmentSchema.parse({ replica, service: 'web', node: 'n1', tenure: 7, resources: spec.resources, specRevision: 1, spec, desired: 'run', placedAt: 1 });
const file = (o: unknown) => JSON.stringify(o);

describe('parseDesired: every way desired.json can be bad', () => {
  it('no file: nothing known, no problem to report', () => {
    expect(parseDesired(undefined)).toEqual({ revision: 0, assignments: [], unknown: 'all' });
  });

  it('the current format, and the same form written before the format field, are read whole', () => {
    for (const text of [file({ format: DESIRED_FORMAT, revision: 9, assignments: [assignment('web-1')] }), file({ revision: 9, assignments: [assignment('web-1')] })]) {
      const r = parseDesired(text);
      expect(r.problem).toBeUndefined();
      expect(r.revision).toBe(9);
      expect(r.assignments.map((a) => a.replica)).toEqual(['web-1']);
      expect(r.unknown).toEqual(new Set());
    }
  });

  const whole = (text: string, code: string, reason: RegExp) => {
    const r = parseDesired(text);
    expect(r.problem?.code).toBe(code);
    expect(r.problem?.reason).toMatch(reason);
    // Nothing can be told: every workload is left alone, and nothing is started from the file.
    expect(r.unknown).toBe('all');
    expect(r.assignments).toEqual([]);
  };

  it('zero bytes (a write cut short) and whitespace', () => {
    whole('', 'CCA-E0592', /empty \(0 bytes\)/);
    whole('  \n', 'CCA-E0592', /only whitespace/);
  });

  it('truncated and corrupt', () => {
    const good = file({ format: 1, revision: 9, assignments: [assignment('web-1')] });
    whole(good.slice(0, good.length / 2), 'CCA-E0592', /not JSON .*truncated or corrupt/);
    whole('\u0000\u0000\u0000garbage', 'CCA-E0592', /not JSON/);
  });

  it('JSON of the wrong shape', () => {
    whole('null', 'CCA-E0592', /found null/);
    whole(file([assignment('web-1')]), 'CCA-E0592', /found a list/);
    whole('42', 'CCA-E0592', /found a number/);
    whole(file({ revision: 3 }), 'CCA-E0592', /found an object with revision/);
    whole(file({ revision: '3', assignments: [] }), 'CCA-E0592', /expected \{ format, revision, assignments \}/);
  });

  it('a newer or an unknown format', () => {
    whole(file({ format: DESIRED_FORMAT + 1, revision: 9, replicas: {} }), 'CCA-E0593', /format 2, newer than the format 1 this agent reads/);
    whole(file({ format: 0, revision: 9, assignments: [] }), 'CCA-E0593', /format 0, not the format 1/);
    whole(file({ format: 'v1', revision: 9, assignments: [] }), 'CCA-E0593', /format "v1"/);
  });

  it('assignments this schema refuses (an older or newer server): the rest kept, their replicas left alone', () => {
    const { spec: _spec, ...noSpec } = assignment('web-2');
    const r = parseDesired(file({ format: 1, revision: 9, assignments: [assignment('web-1'), noSpec, { ...assignment('web-3'), desired: 'hibernate' }] }));
    expect(r.problem?.code).toBe('CCA-E0593');
    expect(r.problem?.reason).toMatch(/2 of 3 assignment\(s\) do not match this agent's schema \(replicas web-2, web-3; first: spec: /);
    expect(r.assignments.map((a) => a.replica)).toEqual(['web-1']);
    expect(r.unknown).toEqual(new Set(['web-2', 'web-3']));
  });

  it('a refused entry without a replica id: nothing can be told apart, so nothing is known', () => {
    whole(file({ format: 1, revision: 9, assignments: [assignment('web-1'), { what: 'is this' }] }), 'CCA-E0593', /some without a replica id/);
  });
});

describe('StateDir: the bad file kept aside, failed writes reported and never thrown', () => {
  const reports = (state: StateDir) => {
    const out: { line: string; d?: Diagnostic }[] = [];
    state.onReport = (line, d) => out.push({ line, ...(d ? { d } : {}) });
    return out;
  };

  it('keeps an unusable desired.json as desired.json.bad-<time>, the newest few only, and says where', () => {
    const t = tempDir('state-bad');
    try {
      const state = new StateDir(t.dir);
      const seen = reports(state);
      for (let i = 0; i < KEEP_BAD_DESIRED + 2; i++) {
        fs.writeFileSync(join(t.dir, 'desired.json'), '{"format":1,"revision":');
        const r = state.desired(Date.UTC(2026, 11, 1, 13, 0, i));
        expect(r.unknown).toBe('all');
      }
      const kept = fs.readdirSync(t.dir).filter((f) => f.startsWith('desired.json.bad-')).sort();
      expect(kept).toEqual(['desired.json.bad-2026-12-01T13-00-02.000Z', 'desired.json.bad-2026-12-01T13-00-03.000Z', 'desired.json.bad-2026-12-01T13-00-04.000Z']);
      expect(fs.existsSync(join(t.dir, 'desired.json'))).toBe(false);
      expect(fs.readFileSync(join(t.dir, kept[2]!), 'utf8')).toBe('{"format":1,"revision":');
      const last = seen.at(-1)!;
      expect(last.d?.code).toBe('CCA-E0592');
      expect(last.d?.params).toMatchObject({ file: join(t.dir, 'desired.json'), kept: join(t.dir, kept[2]!) });
      expect(last.line).toContain('fix: ');
      // A good file is read without a word.
      state.saveDesired(4, [assignment('web-1')]);
      expect(state.desired(0)).toMatchObject({ revision: 4, unknown: new Set() });
      expect(JSON.parse(fs.readFileSync(join(t.dir, 'desired.json'), 'utf8'))).toMatchObject({ format: DESIRED_FORMAT, revision: 4 });
      expect(seen).toHaveLength(KEEP_BAD_DESIRED + 2);
    } finally {
      t.cleanup();
    }
  });

  it('a file it cannot read at all (EACCES, EISDIR) is CCA-E0592 too', () => {
    const t = tempDir('state-eisdir');
    try {
      fs.mkdirSync(join(t.dir, 'desired.json'));
      const state = new StateDir(t.dir);
      const seen = reports(state);
      expect(state.desired(0).unknown).toBe('all');
      expect(seen[0]?.d?.code).toBe('CCA-E0592');
      expect(seen[0]?.d?.params.reason).toMatch(/EISDIR/);
    } finally {
      t.cleanup();
    }
  });

  it('a failed write (ENOSPC, EACCES) returns false, is reported once per file and cause, and its end is said', () => {
    const t = tempDir('state-enospc');
    try {
      let failWith: string | undefined = 'ENOSPC';
      const io: StateIo = {
        ...fs,
        writeFileSync: ((...args: Parameters<typeof fs.writeFileSync>) => {
          if (failWith) throw Object.assign(new Error(`${failWith}: failed, write`), { code: failWith });
          return fs.writeFileSync(...args);
        }) as typeof fs.writeFileSync,
      };
      const state = new StateDir(t.dir, io);
      const seen = reports(state);
      expect(state.saveFenceAt(1_000)).toBe(false);
      expect(state.saveFenceAt(2_000)).toBe(false);
      expect(state.saveCredential('cca_node_x')).toBe(false);
      expect(state.saveLease({ lease: 1, tenure: 2, ttl: 10 })).toBe(false);
      expect(state.saveDesired(1, [])).toBe(false);
      // saveFenceAt writes the supervisors' deadline and the lease's own fence point (docs/fencing.md).
      expect(seen.map((s) => s.d?.code)).toEqual(['CCA-E0594', 'CCA-E0594', 'CCA-E0594', 'CCA-E0594', 'CCA-E0594']);
      expect(seen.map((s) => String(s.d?.params.file).split('/').pop())).toEqual(['fence-at', 'lease-fence-at', 'credential', 'lease.json', 'desired.json']);
      expect(seen[0]!.d!.message).toMatch(/ENOSPC.*supervisors fence at the previous deadline/);
      expect(seen[1]!.d!.message).toMatch(/ENOSPC.*resume its fence clock from the previous fence point/);
      expect(seen[2]!.d!.message).toMatch(/cca node reset/);
      failWith = 'EACCES';
      expect(state.saveFenceAt(3_000)).toBe(false);
      expect(seen).toHaveLength(7);
      expect(fs.readdirSync(t.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      failWith = undefined;
      expect(state.saveFenceAt(4_000)).toBe(true);
      expect(state.fenceAt()).toBe(4_000);
      expect(seen.slice(-2)).toEqual([{ line: `${join(t.dir, 'fence-at')} written again (CCA-E0594 resolved)` }, { line: `${join(t.dir, 'lease-fence-at')} written again (CCA-E0594 resolved)` }]);
    } finally {
      t.cleanup();
    }
  });

  it('an unreadable lease.json is no lease (registering again gives a new tenure), not a crash at start', () => {
    const t = tempDir('state-lease');
    try {
      const state = new StateDir(t.dir);
      for (const text of ['', '{"lease":', 'null', '[]']) {
        fs.writeFileSync(join(t.dir, 'lease.json'), text);
        expect(state.lease()).toBeUndefined();
      }
    } finally {
      t.cleanup();
    }
  });
});

describe('Enrollment: which refusals of the credential start a re-enrollment', () => {
  const t = tempDir('enroll-units');
  afterAll(t.cleanup);
  // The server's side of enrollment: each call issues the next credential.
  let issued = 0;
  const enrollOk = (async () => new Response(JSON.stringify({ node: 'n1', credential: `cca_node_issued_${++issued}` }), { status: 200 })) as typeof fetch;
  const refusal = (client: AgentClient, generation = client.generation) => new ServerError(401, makeDiagnostic('CCA-E0605', { needs: 'a node credential', got: 'no valid token' }), generation);
  const setup = () => {
    const client = new AgentClient('http://127.0.0.1:9', 'n1', 1_000, enrollOk);
    const logs: string[] = [];
    let now = 1_000;
    // The core's Enrollment over the real shell's control plane: the credential and its generation are the client's.
    const control = new HttpControlPlane(client, new StateDir(t.dir), 'join');
    // Set after the control plane read the state directory (an earlier test's enrollment saved one there).
    client.credential = 'cca_node_old';
    const e = new Enrollment({ node: 'n1', control, clock: { mono: () => now, wall: () => now }, log: (l) => logs.push(l), event: () => undefined, stableMs: 10_000 });
    return { client, logs, e, tick: (ms: number) => (now += ms) };
  };

  it('the client marks each answer with the credential it was asked with', async () => {
    const refusing = (async () => new Response(JSON.stringify({ error: makeDiagnostic('CCA-E0605', { needs: 'a node credential', got: 'no valid token' }) }), { status: 401 })) as typeof fetch;
    const client = new AgentClient('http://127.0.0.1:9', 'n1', 1_000, refusing);
    client.credential = 'cca_node_a';
    const asked = client.generation;
    const pending = client.keepalive(1);
    client.credential = 'cca_node_b';
    const e = await pending.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ServerError);
    expect((e as ServerError).generation).toBe(asked);
    expect(client.generation).not.toBe(asked);
    // The join token's own call (enroll) is no node credential's answer.
    expect(((await client.enroll('join').catch((x: unknown) => x)) as ServerError).generation).toBeUndefined();
  });

  it('a 401 on the credential in hand drops it, coded with the call and when the next enrollment goes', () => {
    const { client, logs, e } = setup();
    e.refused(refusal(client), 'lease');
    expect(client.credential).toBe('');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^CCA-E0590 the server refused the credential of node n1 \(CCA-E0605 .*; seen on lease\).*refusal 1 in a row, next enrollment in 0 ms/);
  });

  it('a 401 to a call made with a credential since replaced changes nothing: the new one stays', () => {
    const { client, logs, e } = setup();
    const stale = refusal(client);
    client.credential = 'cca_node_new';
    e.refused(stale, 'assignments');
    expect(client.credential).toBe('cca_node_new');
    expect(logs).toEqual([]);
  });

  it('refusals in a row back off up to the cap, and count from zero once a new credential held', async () => {
    expect([1, 2, 3, 4, 8, 20].map(reenrollDelayMs)).toEqual([0, 1_000, 2_000, 4_000, 60_000, ENROLL_BACKOFF.maxMs]);
    const { client, e, tick, logs } = setup();
    e.refused(refusal(client), 'lease');
    client.credential = 'cca_node_2';
    e.refused(refusal(client), 'lease');
    expect(await e.ensure()).toBe(1_000);
    tick(400);
    expect(await e.ensure()).toBe(600);
    expect(logs.at(-1)).toMatch(/refusal 2 in a row, next enrollment in 1000 ms/);
    tick(600);
    expect(await e.ensure()).toBe(0);
    expect(client.credential).toMatch(/^cca_node_issued_/);
    expect(logs.at(-1)).toBe('enrolled');
    // Held for less than the lease TTL: the next refusal is the third in a row.
    tick(9_000);
    e.held();
    e.refused(refusal(client), 'report');
    expect(logs.at(-1)).toMatch(/refusal 3 in a row, next enrollment in 2000 ms/);
    tick(2_000);
    expect(await e.ensure()).toBe(0);
    // A credential that worked for a whole lease TTL is a recovery: the next refusal is the first again.
    tick(10_000);
    e.held();
    e.refused(refusal(client), 'report');
    expect(logs.at(-1)).toMatch(/refusal 1 in a row, next enrollment in 0 ms/);
  });
});
