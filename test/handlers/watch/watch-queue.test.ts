import { describe, expect, test } from 'vitest';
import type { Frame } from '../../../handlers/watch/frame-cache.js';
import { PodBytes, WatchQueue } from '../../../handlers/watch/watch-queue.js';

const frame = (revision: number, bytes: number): Frame => ({ revision, text: 'x'.repeat(bytes), bytes });

describe('a watcher\'s queue, counted in bytes', () => {
  test('at its own bound once queued and in-flight bytes reach it; below it again when a write completes', () => {
    const pod = new PodBytes(1_000_000);
    const q = new WatchQueue(pod, 100);
    q.push(frame(1, 60));
    expect(q.over()).toBeUndefined();
    q.push(frame(2, 60));
    expect(q.over()).toBe('watcher');
    const chunk = q.take(1_000)!;
    expect(chunk.bytes).toBe(120);
    // Handed to the socket but not written yet: still counted.
    expect(q.over()).toBe('watcher');
    q.written(chunk.bytes);
    expect(q.over()).toBeUndefined();
    expect(pod.used).toBe(0);
  });

  test('the pod\'s bound stops watchers that hold something, never an empty one (every watcher progresses)', () => {
    const pod = new PodBytes(100);
    const a = new WatchQueue(pod, 1_000);
    const b = new WatchQueue(pod, 1_000);
    a.push(frame(1, 100));
    expect(a.over()).toBe('pod');
    expect(b.over()).toBeUndefined();
    b.push(frame(1, 10));
    expect(b.over()).toBe('pod');
  });

  test('a cut resumes from the first frame not handed to the socket; dropping and closing give every byte back once', () => {
    const pod = new PodBytes(1_000);
    const q = new WatchQueue(pod, 1_000);
    for (let r = 5; r <= 8; r++) q.push(frame(r, 10));
    const chunk = q.take(20)!;
    expect(chunk.text).toBe('x'.repeat(20));
    expect(q.resumeFrom()).toBe(7);
    q.drop();
    expect(q.resumeFrom()).toBe(7);
    expect(pod.used).toBe(20);
    q.close();
    expect(pod.used).toBe(0);
    // A write that completes after the close counts nothing twice.
    q.written(chunk.bytes);
    expect(pod.used).toBe(0);
  });

  test('a frame larger than a whole write goes out alone', () => {
    const q = new WatchQueue(new PodBytes(1_000_000), 1_000_000);
    q.push(frame(1, 500));
    q.push(frame(2, 10));
    expect(q.take(100)!.bytes).toBe(500);
    expect(q.take(100)!.bytes).toBe(10);
    expect(q.take(100)).toBeUndefined();
  });
});
