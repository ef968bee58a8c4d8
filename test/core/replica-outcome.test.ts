import { describe, expect, test } from 'vitest';
import { decodeFact, encodeFact } from '../../core/keys.js';
import { ranToCompletion, replicaReason, type ReplicaEnded } from '../../core/model/replica-outcome.js';

const key = '/replicas/job/job-00000001';
const old = { id: 'job-00000001', service: 'job', specRevision: 3, desired: 'stop', createdAt: 1, retired: true };

describe('replica records before typed outcomes', () => {
  test('an old completed record still counts as completed and shows its sentence', () => {
    const r = decodeFact('replica', key, JSON.stringify({ ...old, reason: 'completed: exited with code 0 on n1 (restart never)' }));
    expect(r.ended).toEqual({ outcome: 'completed' });
    expect(ranToCompletion(r)).toBe(true);
    expect(replicaReason(r)).toBe('completed: exited with code 0 on n1 (restart never)');
  });

  test('any other old sentence gives no outcome; a record without a reason parses too', () => {
    const failed = decodeFact('replica', key, JSON.stringify({ ...old, reason: 'failed with code 1 on n1 (restart always)' }));
    expect(failed.ended).toBeUndefined();
    expect(ranToCompletion(failed)).toBe(false);
    const live = decodeFact('replica', key, JSON.stringify({ ...old, desired: 'run', retired: false, reason: 'completed: not retired' }));
    expect(live.ended).toBeUndefined();
    const bare = decodeFact('replica', key, JSON.stringify({ id: 'job-00000001', service: 'job', specRevision: 3, desired: 'run', createdAt: 1 }));
    expect(bare).toMatchObject({ reason: '', retired: false });
    expect(replicaReason(bare)).toBe('');
  });

  test('a typed record is decided by its fields, whatever an old sentence says', () => {
    const r = decodeFact('replica', key, encodeFact('replica', { ...old, desired: 'stop', reason: 'completed: stale words', ended: { outcome: 'restarted', node: 'n1' } }));
    expect(r.ended!.outcome).toBe('restarted');
    expect(ranToCompletion(r)).toBe(false);
  });
});

describe('sentences rendered from the typed fields', () => {
  const base = { service: 'web', template: 'ab12', retired: true, reason: '' };
  const exit = (e: Partial<NonNullable<ReplicaEnded['exit']>> = {}): ReplicaEnded => ({ outcome: 'restarted', node: 'n1', exit: { state: 'failed', code: 137, restart: 'always', ...e } });

  test('how a replica ended', () => {
    expect(replicaReason({ ...base, ended: exit() })).toBe('failed with code 137 on n1 (restart always)');
    expect(replicaReason({ ...base, ended: exit({ message: 'liveness failed: …' }) })).toBe('failed with code 137 on n1 (restart always): liveness failed: …');
    expect(replicaReason({ ...base, ended: exit({ init: { step: 'migrate', code: 1 }, message: 'ignored for init' }) })).toBe('init step migrate failed (code 1) on n1 (restart always)');
    expect(replicaReason({ ...base, ended: exit({ init: { step: 'migrate', timedOut: true } }) })).toBe('init step migrate timed out on n1 (restart always)');
    expect(replicaReason({ ...base, ended: { outcome: 'completed', node: 'n2', exit: { state: 'exited', code: 0, restart: 'never' } } })).toBe('completed: exited with code 0 on n2 (restart never)');
    expect(replicaReason({ ...base, ended: { outcome: 'lost', node: 'n3' } })).toBe('lost with node n3');
  });

  test('why it stopped, and why it was created', () => {
    const stopped: ReplicaEnded = { outcome: 'stopped', node: 'n1', seen: 'reported', reported: 'exited' };
    expect(replicaReason({ ...base, stopBy: { by: 'rollout' }, ended: stopped })).toBe('rolling update: n1 reports it exited');
    expect(replicaReason({ ...base, stopBy: { by: 'scale-down' }, ended: { outcome: 'stopped', seen: 'grace-expired', graceMs: 30_000 } })).toBe('scaled down: the grace period of 30000 ms ran out');
    expect(replicaReason({ ...base, retired: false, stopBy: { by: 'drain', node: 'n4' } })).toBe('drain of node n4');
    expect(replicaReason({ ...base, retired: false, origin: { by: 'rollout' } })).toBe('rolling update of web to template ab12');
    expect(replicaReason({ ...base, retired: false, origin: { by: 'scale' } })).toBe('');
    expect(replicaReason({ ...base, retired: false, origin: { by: 'replacement' }, replaces: { replica: 'web-1', ended: { outcome: 'lost', node: 'n2' } } })).toBe('replaces web-1 (lost with node n2)');
  });
});
