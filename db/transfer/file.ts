import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { rename, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { CcaError, isCcaError, messageOf } from '../../core/diagnostics/index.js';
import {
  FORMAT,
  FORMAT_VERSION,
  headerLine,
  keyLine,
  leaseLine,
  trailerLine,
  type KeyRecord,
  type LeaseRecord,
  type Progress,
  type SnapshotSource,
} from './format.js';

/**
 * Write a snapshot file from a source, streamed. It is written beside FILE and renamed
 * into place at the end, so FILE is either the whole snapshot or untouched.
 */
export async function writeSnapshotFile(source: SnapshotSource, file: string, progress?: Progress): Promise<{ keys: number; leases: number }> {
  const partial = `${file}.partial`;
  const out = createWriteStream(partial, { mode: 0o600 });
  const failed = new Promise<never>((_, reject) => out.once('error', (e) => reject(new CcaError('CCA-E0156', { file, action: 'written', reason: messageOf(e) }))));
  failed.catch(() => undefined);
  const hash = createHash('sha256');
  const write = async (line: string, hashed: boolean) => {
    const text = `${line}\n`;
    if (hashed) hash.update(text);
    if (!out.write(text)) await Promise.race([once(out, 'drain'), failed]);
  };
  try {
    await write(JSON.stringify({ format: FORMAT, version: FORMAT_VERSION, revision: source.revision, keys: source.keyCount, leases: source.leases.length }), false);
    for (const l of source.leases) await write(JSON.stringify({ lease: l.lease, ttl: l.ttl }), true);
    let keys = 0;
    for await (const k of source.keys()) {
      await write(JSON.stringify(k), true);
      if (++keys % 1000 === 0) progress?.(keys, source.keyCount);
    }
    progress?.(keys, source.keyCount);
    await write(JSON.stringify({ end: true, keys, leases: source.leases.length, sha256: hash.digest('hex') }), false);
    out.end();
    await Promise.race([once(out, 'finish'), failed]);
    await rename(partial, file).catch((e: unknown) => {
      throw new CcaError('CCA-E0156', { file, action: 'written', reason: messageOf(e) });
    });
    return { keys, leases: source.leases.length };
  } catch (e) {
    out.destroy();
    await rm(partial, { force: true }).catch(() => undefined);
    throw e;
  }
}

type Line = { kind: 'lease'; lease: LeaseRecord } | { kind: 'key'; key: KeyRecord };

/** The file's lines after the header, each parsed and checked; the trailer checked last. */
async function* linesOf(file: string): AsyncGenerator<Line, { revision: number; keys: number; leases: number }> {
  const bad = (reason: string) => new CcaError('CCA-E0154', { file, reason });
  const input = createReadStream(file, { encoding: 'utf8' });
  const lines = createInterface({ input, crlfDelay: Infinity });
  const hash = createHash('sha256');
  let n = 0;
  let header: ReturnType<typeof headerLine.parse> | undefined;
  let trailer: ReturnType<typeof trailerLine.parse> | undefined;
  let keys = 0;
  let leases = 0;
  let lastKey: string | undefined;
  try {
    for await (const text of lines) {
      n++;
      if (trailer) throw bad(`line ${n}: text after the trailer`);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw bad(`line ${n} is not JSON`);
      }
      if (!header) {
        const v = (json as { version?: unknown } | null)?.version;
        if ((json as { format?: unknown } | null)?.format === FORMAT && typeof v === 'number' && v > FORMAT_VERSION) {
          throw new CcaError('CCA-E0155', { file, found: v, known: FORMAT_VERSION });
        }
        const h = headerLine.safeParse(json);
        if (!h.success) throw bad(`line 1 is not a snapshot header (${h.error.issues[0]!.path.join('.')}: ${h.error.issues[0]!.message})`);
        header = h.data;
        continue;
      }
      const t = trailerLine.safeParse(json);
      if (t.success) {
        trailer = t.data;
        continue;
      }
      hash.update(`${text}\n`);
      const l = leaseLine.safeParse(json);
      if (l.success) {
        if (keys > 0) throw bad(`line ${n}: a lease after the keys`);
        leases++;
        yield { kind: 'lease', lease: l.data };
        continue;
      }
      const k = keyLine.safeParse(json);
      if (!k.success) throw bad(`line ${n} is neither a lease, a key nor the trailer`);
      if (lastKey !== undefined && Buffer.compare(Buffer.from(lastKey), Buffer.from(k.data.k)) >= 0) throw bad(`line ${n}: keys out of order`);
      lastKey = k.data.k;
      keys++;
      yield { kind: 'key', key: k.data };
    }
  } catch (e) {
    if (isCcaError(e)) throw e;
    throw new CcaError('CCA-E0156', { file, action: 'read', reason: messageOf(e) });
  } finally {
    lines.close();
    input.destroy();
  }
  if (!header) throw bad('the file is empty');
  if (!trailer) throw bad('the trailer is missing: the file was cut short');
  if (trailer.sha256 !== hash.digest('hex')) throw bad('the checksum does not match the content');
  if (trailer.keys !== keys || header.keys !== keys) throw bad(`it announces ${header.keys} keys and holds ${keys}`);
  if (trailer.leases !== leases || header.leases !== leases) throw bad(`it announces ${header.leases} leases and holds ${leases}`);
  return { revision: header.revision, keys, leases };
}

/**
 * A snapshot file as a source. The whole file is read and checked first (format,
 * every line, order, counts, checksum), so a damaged file is refused (CCA-E0154) before a
 * restore writes anything; keys() then reads it again.
 */
export async function readSnapshotFile(file: string): Promise<SnapshotSource> {
  const leases: LeaseRecord[] = [];
  const it = linesOf(file);
  let r = await it.next();
  const known = new Set<number>();
  while (!r.done) {
    const line = r.value;
    if (line.kind === 'lease') {
      leases.push(line.lease);
      known.add(line.lease.lease);
    } else if (line.key.l !== undefined && !known.has(line.key.l)) {
      throw new CcaError('CCA-E0154', { file, reason: `key ${line.key.k} is attached to lease ${line.key.l}, which the file does not list` });
    }
    r = await it.next();
  }
  const summary = r.value;
  return {
    revision: summary.revision,
    keyCount: summary.keys,
    leases,
    async *keys() {
      for await (const line of linesOf(file)) {
        if (line.kind === 'key') yield line.key;
      }
    },
  };
}
