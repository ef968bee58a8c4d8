import { makeDiagnostic, type Diagnostic, messageOf } from '../core/diagnostics/index.js';
import { segmentProblem } from '../core/keys.js';
import { LOG_LIMITS, logRequestSchema, type LogFrame, type LogRequest } from '../core/model/index.js';
import type { AgentClient } from './client.js';
import { filesPresent, readLogs, type ReadLimits } from './logs.js';
import type { Runtime } from './runtime.js';

export interface LogServerOptions {
  node: string;
  client: AgentClient;
  runtime: Runtime;
  /** Whether the agent holds this replica (a slot: running, or exited and not yet forgotten). */
  holds: (replica: string) => boolean;
  pollWaitMs: number;
  isClosed: () => boolean;
  sleep: (ms: number) => Promise<void>;
  log: (line: string) => void;
  /** Tighter bounds (tests). */
  limits?: Partial<ReadLimits> & { maxStreams?: number };
}

const encoder = new TextEncoder();
const frame = (f: LogFrame): Uint8Array => encoder.encode(`${JSON.stringify(f)}\n`);

/**
 * The agent's half of `cca logs` (docs/agent.md, "Logs"): it long-polls the server for log
 * requests of its node and answers each with one streamed POST of frames. The node opens no
 * port and needs no credential but its own: the server only ever hands it requests it can
 * check (a replica it holds), and the bytes go through the server, never the store.
 */
export class LogServer {
  private readonly active = new Set<AbortController>();

  constructor(private readonly opts: LogServerOptions) {}

  async loop(): Promise<void> {
    let backoff = 200;
    while (!this.opts.isClosed()) {
      try {
        const r = await this.opts.client.logRequests(this.opts.pollWaitMs);
        backoff = 200;
        for (const raw of r.requests) {
          const req = logRequestSchema.safeParse(raw);
          if (req.success) void this.answer(req.data);
          else this.opts.log(`log request refused: ${req.error.issues[0]?.message ?? 'malformed'}`);
        }
      } catch {
        // The lease and assignment loops log the server's absence; this one only retries.
        await this.opts.sleep(backoff);
        backoff = Math.min(backoff * 2, 5_000);
      }
    }
  }

  /** End every stream (the agent is closing). */
  close(): void {
    for (const ac of this.active) ac.abort();
  }

  /** Why this request is refused, or undefined when it is served. */
  private refusal(req: LogRequest, files: string[] | undefined): Diagnostic | undefined {
    const { node } = this.opts;
    if (segmentProblem(req.replica) !== undefined || !this.opts.holds(req.replica)) return makeDiagnostic('CCA-E0560', { node, replica: req.replica });
    if (this.active.size >= (this.opts.limits?.maxStreams ?? LOG_LIMITS.maxStreams)) return makeDiagnostic('CCA-E0562', { node, streams: this.active.size });
    if (!files) return makeDiagnostic('CCA-E0563', { node, replica: req.replica, reason: `the ${this.opts.runtime.name} runtime keeps no output` });
    if (!filesPresent(files)) return makeDiagnostic('CCA-E0563', { node, replica: req.replica, reason: 'its output files are gone' });
    return undefined;
  }

  private async answer(req: LogRequest): Promise<void> {
    const files = this.opts.runtime.logFiles?.(req.replica);
    const refused = this.refusal(req, files);
    const ac = new AbortController();
    if (!refused) this.active.add(ac);
    const source = refused ? undefined : readLogs(files!, req, ac.signal, this.opts.limits);
    const node = this.opts.node;
    let first = true;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (first) {
          first = false;
          controller.enqueue(frame(refused ? { refused } : { serving: { replica: req.replica, node, files: files!.map((f) => f.split('/').pop()!) } }));
          if (refused) controller.close();
          return;
        }
        const next = await source!.next();
        if (next.done) controller.close();
        else controller.enqueue(frame(next.value));
      },
      cancel() {
        ac.abort();
      },
    });
    try {
      await this.opts.client.logStream(req.id, body, ac.signal);
    } catch (e) {
      // The client went away or the server restarted: nothing is waiting for the rest.
      if (!this.opts.isClosed()) this.opts.log(`log stream of ${req.replica} ended: ${messageOf(e)}`);
    } finally {
      ac.abort();
      await source?.return(undefined);
      this.active.delete(ac);
    }
  }
}
