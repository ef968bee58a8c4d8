import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fail } from './exit.js';
import { messageOf } from '../core/diagnostics/index.js';

export interface SourceFile {
  /** As the user wrote it (joined with the entry for a directory), so diagnostics name it the same way. */
  name: string;
  path: string;
  text: string;
}

/** FILE… where a directory means its `.cca` files, in name order. */
export async function readSources(cwd: string, args: readonly string[]): Promise<SourceFile[]> {
  const out: SourceFile[] = [];
  for (const arg of args) {
    const path = resolve(cwd, arg);
    let isDir = false;
    try {
      isDir = (await stat(path)).isDirectory();
    } catch (e) {
      fail('CCA-E0705', { file: arg, reason: reason(e) });
    }
    const entries = isDir ? (await readdir(path)).filter((f) => f.endsWith('.cca')).sort().map((f) => ({ name: join(arg, f), path: join(path, f) })) : [{ name: arg, path }];
    if (entries.length === 0) fail('CCA-E0705', { file: arg, reason: 'the directory holds no .cca files' });
    for (const e of entries) {
      try {
        out.push({ ...e, text: await readFile(e.path, 'utf8') });
      } catch (err) {
        fail('CCA-E0705', { file: e.name, reason: reason(err) });
      }
    }
  }
  return out;
}

export function reason(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (err.code === 'ENOENT') return 'no such file or directory';
  if (err.code === 'EACCES') return 'permission denied';
  if (err.code === 'EISDIR') return 'it is a directory';
  return err.code ?? messageOf(e);
}
