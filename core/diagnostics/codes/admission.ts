import type { DiagnosticDef } from '../types.js';

/**
 * What a server pod admits and keeps (issue #20, docs/api.md "Limits"): watch streams
 * bounded in bytes, streams per credential, a node's write rate. One module, so it merges
 * without touching the server's list.
 */
export const admissionCodes = [
  {
    code: 'CCA-E0640',
    blame: 'external',
    title: 'watch cut: the client stopped reading',
    cause: 'the watch stream fell {queuedBytes} bytes behind (at most {limitBytes} may wait for one watcher) and its client read nothing for {stallMs} ms; it was cut before revision {resumeFrom}',
    fix: 'watch again from revision {resumeFrom} (`cca get -w` and the console resume by themselves); a client that cannot keep up should watch a narrower prefix',
  },
  {
    code: 'CCA-E0641',
    blame: 'environment',
    title: 'watch cut: the pod is holding too much for its watchers',
    cause: 'the watchers of this pod hold {podBytes} bytes not yet read (at most {limitBytes} in all), and this watch could not send for {stallMs} ms; it was cut before revision {resumeFrom}',
    fix: 'watch again from revision {resumeFrom} (`cca get -w` and the console resume by themselves), preferably on another pod; if it recurs, run more server pods or find the clients that stopped reading (`cca_watch_cuts_total`)',
  },
  {
    code: 'CCA-E0642',
    blame: 'user',
    title: 'too many streams for one credential',
    cause: '{who} already holds {open} watch streams and long polls on this pod (at most {max})',
    fix: 'close the streams you no longer need and retry after {retryAfterSeconds} s, or give each client its own token; an operator may raise the bound with `cca server {flag} N`',
  },
  {
    code: 'CCA-E0643',
    blame: 'user',
    title: 'node writing too fast',
    cause: 'node {node} asked to write {cost} observations or events, more than its rate of {ratePerSecond} a second (bursts of {burst}) allows now',
    fix: 'retry after {retryAfterSeconds} s with the newest state (the agent does so by itself); an operator may raise the rate with `cca server --node-write-rate N`',
  },
] as const satisfies readonly DiagnosticDef[];
