import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { SentRequest } from './client.js';

/** One cca invocation that talked to a server or failed: what `cca bundle` reports. */
export interface JournalEntry {
  at: string;
  command: string;
  args: string[];
  exitCode: number;
  requests: SentRequest[];
  /** Diagnostics of a failure that sent no request (a local parse error, a bad flag). */
  diagnostics?: SentRequest['diagnostics'];
}

const KEEP = 200;

export function stateDir(env: Readonly<Record<string, string | undefined>>): string {
  if (env.CCA_STATE_DIR) return env.CCA_STATE_DIR;
  return join(env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state'), 'cca');
}

/** Flags that carry secrets lose their values before anything is written down. */
export function redactArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--token') {
      out.push(a);
      if (i + 1 < args.length) out.push('(redacted)');
      i++;
    } else out.push(a.startsWith('--token=') ? '--token=(redacted)' : a);
  }
  return out;
}

/** Best effort: a journal that cannot be written never fails the command it records. */
export async function record(env: Readonly<Record<string, string | undefined>>, entry: JournalEntry): Promise<void> {
  try {
    const dir = stateDir(env);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, 'requests.jsonl');
    await appendFile(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    if (lines.length > KEEP * 2) await writeFile(file, `${lines.slice(-KEEP).join('\n')}\n`, { mode: 0o600 });
  } catch {
    // The journal is evidence for bug reports, not part of any command's contract.
  }
}

export async function readJournal(env: Readonly<Record<string, string | undefined>>): Promise<JournalEntry[]> {
  try {
    const text = await readFile(join(stateDir(env), 'requests.jsonl'), 'utf8');
    return text
      .split('\n')
      .filter(Boolean)
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as JournalEntry];
        } catch {
          return [];
        }
      })
      .slice(-KEEP);
  } catch {
    return [];
  }
}
