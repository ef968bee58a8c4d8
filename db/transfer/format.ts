import { z } from 'zod';

/**
 * The snapshot file: JSON lines. A header, the leases, the keys (in key order), and a
 * trailer that repeats the counts and carries the SHA-256 of every line between header and
 * trailer (each with its "\n"): a file cut short or edited is refused before anything is
 * written. Bump FORMAT_VERSION for any change a reader of the old version would misread.
 */
export const FORMAT = 'ccattler-snapshot';
export const FORMAT_VERSION = 1;

export const headerLine = z.object({
  format: z.literal(FORMAT),
  version: z.number().int().min(1),
  /** The source store's revision every key was read at. */
  revision: z.number().int().min(1),
  keys: z.number().int().min(0),
  leases: z.number().int().min(0),
}).strict();

/** A lease some key is attached to: its id in the source, and its granted TTL (re-granted in full on restore). */
export const leaseLine = z.object({ lease: z.number().int().min(1), ttl: z.number().int().min(1) }).strict();

/** One key: its value, and the source lease it is attached to (absent: none). */
export const keyLine = z.object({ k: z.string().min(1), v: z.string(), l: z.number().int().min(1).optional() }).strict();

export const trailerLine = z.object({
  end: z.literal(true),
  keys: z.number().int().min(0),
  leases: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
}).strict();

export type SnapshotHeader = z.output<typeof headerLine>;
export type LeaseRecord = z.output<typeof leaseLine>;
export type KeyRecord = z.output<typeof keyLine>;

/** What a restore reads from: a store at one revision, or a checked file. */
export interface SnapshotSource {
  /** The source's revision the keys were read at. */
  revision: number;
  keyCount: number;
  leases: LeaseRecord[];
  /** Every key, in key order; may be iterated more than once. */
  keys(): AsyncIterable<KeyRecord>;
}

/** keys copied so far / total, after each batch. */
export type Progress = (done: number, total: number) => void;
