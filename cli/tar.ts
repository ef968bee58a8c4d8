import { gzipSync } from 'node:zlib';

export interface TarEntry {
  name: string;
  data: string | Uint8Array;
  mode?: number;
}

const BLOCK = 512;

function field(buf: Buffer, offset: number, length: number, value: string): void {
  buf.write(value, offset, Math.min(length, Buffer.byteLength(value)), 'utf8');
}

function octal(buf: Buffer, offset: number, length: number, n: number): void {
  field(buf, offset, length, `${n.toString(8).padStart(length - 1, '0')}\0`);
}

/** One ustar header block for a regular file (names up to 100 bytes: the bundle's are short). */
function header(name: string, size: number, mode: number, mtime: number): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name longer than 100 bytes: ${name}`);
  const h = Buffer.alloc(BLOCK);
  field(h, 0, 100, name);
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, Math.floor(mtime / 1000));
  h.fill(' ', 148, 156);
  field(h, 156, 1, '0');
  field(h, 257, 6, 'ustar\0');
  field(h, 263, 2, '00');
  field(h, 265, 32, 'cca');
  field(h, 297, 32, 'cca');
  let sum = 0;
  for (const b of h) sum += b;
  field(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

/** A gzip-compressed POSIX ustar archive of regular files, readable by `tar -xzf`. */
export function tarGz(entries: readonly TarEntry[], mtime: number): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = typeof e.data === 'string' ? Buffer.from(e.data, 'utf8') : Buffer.from(e.data);
    parts.push(header(e.name, data.length, e.mode ?? 0o600, mtime), data);
    const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return gzipSync(Buffer.concat(parts));
}
