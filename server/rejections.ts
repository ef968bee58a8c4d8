import { toDiagnostic, type Diagnostic } from '../core/diagnostics/index.js';
import type { Logger } from './log.js';

type Absorb = (reason: unknown) => boolean;
type Fatal = (d: Diagnostic, stack: string | undefined) => void;

/**
 * The policy of a server process (`cca server`, `npm start`) for a promise rejection nobody
 * handled. Node's own would end the process with a stack trace. Here one a part of the pod
 * knows how to recover from is absorbed by it (graphile-worker failing to release a job while
 * the database is away: jobs/graphile-driver.ts); any other is a bug of ours, told as a coded
 * diagnostic (its stack for the log line, for the report) to `fatal`, whose caller stops the
 * pod and exits 70.
 */
export function rejectionPolicy(absorb: Absorb, fatal: Fatal): (reason: unknown) => void {
  return (reason) => {
    if (absorb(reason)) return;
    fatal(toDiagnostic(reason, 'the server pod (a promise nobody awaited was rejected)'), reason instanceof Error ? reason.stack : undefined);
  };
}

/** Installs `rejectionPolicy` for the process; returns the function that removes it. */
export function guardRejections(absorb: Absorb, fatal: Fatal): () => void {
  const onRejection = rejectionPolicy(absorb, fatal);
  process.on('unhandledRejection', onRejection);
  return () => void process.off('unhandledRejection', onRejection);
}

/**
 * What both server entry points (`cca server`, `npm start`) install before their pod starts:
 * the policy over `server()` (undefined while it starts), a fatal rejection logged once with
 * its stack and `stop()` asked; `fatal()` is the diagnostic that decides the exit code.
 */
export function guardServerProcess(server: () => { absorbRejection(reason: unknown): boolean } | undefined, log: Logger, stop: () => void): { fatal(): Diagnostic | undefined; remove(): void } {
  let first: Diagnostic | undefined;
  const remove = guardRejections(
    (reason) => server()?.absorbRejection(reason) ?? false,
    (d, stack) => {
      log.error({ code: d.code, blame: d.blame, fix: d.fix, stack }, `${d.code} ${d.message}: stopping`);
      first ??= d;
      stop();
    },
  );
  return { fatal: () => first, remove };
}
