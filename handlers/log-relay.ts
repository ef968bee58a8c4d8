import { randomBytes } from 'node:crypto';
import { CcaError } from '../core/diagnostics/index.js';
import type { LogRequest } from '../core/model/index.js';

/** A request waiting for its node's agent to answer with a stream. */
interface Open {
  node: string;
  req: LogRequest;
  /** Hands the agent's upload to the client's response; resolves when the client is done with it. */
  deliver: (body: ReadableStream<Uint8Array>) => Promise<void>;
}

/**
 * The meeting point of `GET /v1/replicas/{id}/logs` and the node's agent (docs/agent.md,
 * "Logs"): the client's request waits here, the agent's log-request long poll takes it, and
 * the agent's streamed POST is piped into the client's response. Log bytes pass through
 * memory only, never the store.
 *
 * This is state in a server pod, on purpose and bounded (requests live at most
 * LOG_LIMITS.answerWithinMs before an agent takes them, streams as long as their client
 * reads): the agent's poll and its POST must reach the pod the client asked. With several
 * pods behind a load balancer that needs routing by node (docs/api.md says so); one pod
 * (the default deployment) needs nothing.
 */
export class LogRelay {
  private readonly pending = new Map<string, LogRequest[]>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly open = new Map<string, Open>();

  /**
   * Queue a request for `node`; resolves with the agent's stream once it answers, rejects
   * with CCA-E0670 after `answerWithinMs`, or when `gone` aborts (the client left).
   */
  request(node: string, req: Omit<LogRequest, 'id'>, answerWithinMs: number, gone: AbortSignal): Promise<{ body: ReadableStream<Uint8Array>; done: (ok: boolean) => void }> {
    const id = randomBytes(16).toString('hex');
    const full: LogRequest = { ...req, id };
    return new Promise((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        // A listener left on the client's request signal keeps that request alive (agent.ts, changedSince).
        gone.removeEventListener('abort', left);
        this.open.delete(id);
        const q = this.pending.get(node)?.filter((r) => r.id !== id) ?? [];
        if (q.length > 0) this.pending.set(node, q);
        else this.pending.delete(node);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new CcaError('CCA-E0670', { node, replica: req.replica, seconds: Math.round(answerWithinMs / 1000) }));
      }, answerWithinMs);
      const left = () => {
        cleanup();
        reject(new CcaError('CCA-E0670', { node, replica: req.replica, seconds: 0 }));
      };
      gone.addEventListener('abort', left, { once: true });
      this.open.set(id, {
        node,
        req: full,
        deliver: (body) => {
          cleanup();
          return new Promise<void>((finished) => resolve({ body, done: () => finished() }));
        },
      });
      this.pending.set(node, [...(this.pending.get(node) ?? []), full]);
      for (const wake of this.waiters.get(node) ?? []) wake();
    });
  }

  /** The requests waiting for `node`, taken; waits up to `waitMs` for one to arrive. */
  async take(node: string, waitMs: number, gone: AbortSignal): Promise<LogRequest[]> {
    if (!this.pending.has(node) && waitMs > 0 && !gone.aborted) {
      await new Promise<void>((resolve) => {
        const set = this.waiters.get(node) ?? new Set();
        this.waiters.set(node, set);
        const done = () => {
          clearTimeout(timer);
          gone.removeEventListener('abort', done);
          set.delete(done);
          if (set.size === 0) this.waiters.delete(node);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        gone.addEventListener('abort', done, { once: true });
        set.add(done);
      });
    }
    const taken = this.pending.get(node) ?? [];
    this.pending.delete(node);
    return taken;
  }

  /** The agent of `node` answers request `id` with `body`; resolves once the client is done with it. */
  deliver(node: string, id: string, body: ReadableStream<Uint8Array>): Promise<void> {
    const o = this.open.get(id);
    // Another node's request is not this node's to answer: the same answer as an unknown one.
    if (!o || o.node !== node) throw new CcaError('CCA-E0671', { id, node });
    return o.deliver(body);
  }
}
