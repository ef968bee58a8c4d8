import { createInterface } from 'node:readline/promises';

/** Everything a command touches outside itself, so tests run commands in-process with fakes. */
export interface Io {
  stdout: { write(s: string): void; isTTY: boolean };
  stderr: { write(s: string): void; isTTY: boolean };
  stdinIsTTY: boolean;
  /** Ask one question on the terminal; resolves to the answer line. */
  prompt(question: string): Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** Aborted on Ctrl-C: watches and waits end quietly. */
  signal: AbortSignal;
  now(): number;
}

export function processIo(): Io {
  const ac = new AbortController();
  // The first Ctrl-C ends watches, waits, prompts and requests through the signal (exit
  // code from the command); a second one gets Node's default and kills the process.
  process.once('SIGINT', () => ac.abort());
  return {
    stdout: { write: (s) => void process.stdout.write(s), isTTY: process.stdout.isTTY === true },
    stderr: { write: (s) => void process.stderr.write(s), isTTY: process.stderr.isTTY === true },
    stdinIsTTY: process.stdin.isTTY === true,
    prompt: async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      // Ctrl-C at the prompt is a "no", not a hang.
      rl.once('SIGINT', () => ac.abort());
      try {
        return await rl.question(question, { signal: ac.signal });
      } catch {
        return '';
      } finally {
        rl.close();
      }
    },
    env: process.env,
    cwd: process.cwd(),
    signal: ac.signal,
    now: () => Date.now(),
  };
}
