import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QUORUM, type MembershipVersion } from '../../core/model/quorum.js';
import type { PeerKeys } from './keys.js';
import { verifySignature } from './keys.js';
import { answerText, PEER_PATH, questionSchema, questionText, type Answer } from './protocol.js';

export interface PeerServerOptions {
  node: string;
  keys: PeerKeys;
  /** host:port to listen on; port 0 picks one. */
  listen: string;
  /** The agent's membership copy: only its members are answered. */
  membership: () => MembershipVersion | undefined;
  /** Whether this agent reaches the control plane (agent/core/quorum.ts cannotReach, negated). */
  reaches: () => boolean | Promise<boolean>;
  maxConcurrent?: number;
}

/**
 * The agent's peer endpoint: `POST /v1/peer/reach` answers a member's signed question
 * "can you reach the control plane?" with a signed answer. Bounded: a small body, a short
 * request timeout, a cap on questions in flight; anything else is refused without an answer
 * (which the asker counts as no answer).
 */
export class PeerServer {
  private server: Server | undefined;
  private inFlight = 0;

  constructor(private readonly o: PeerServerOptions) {}

  /** Start listening; resolves to the address it listens on (host:port). */
  async start(): Promise<string> {
    const { host, port } = splitHostPort(this.o.listen);
    const server = createServer((req, res) => void this.handle(req, res));
    server.requestTimeout = 2 * QUORUM.askTimeoutMs;
    server.headersTimeout = 2 * QUORUM.askTimeoutMs;
    server.keepAliveTimeout = 5_000;
    server.maxHeadersCount = 32;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const a = server.address() as AddressInfo;
    return `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refuse = (status: number) => {
      res.writeHead(status, { connection: 'close' }).end();
      req.destroy();
    };
    if (req.method !== 'POST' || req.url !== PEER_PATH) return refuse(404);
    if (this.inFlight >= (this.o.maxConcurrent ?? QUORUM.maxConcurrentQuestions)) return refuse(503);
    this.inFlight++;
    try {
      const body = await readBounded(req, QUORUM.maxBodyBytes);
      if (body === undefined) return refuse(413);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        return refuse(400);
      }
      const q = questionSchema.safeParse(json);
      if (!q.success || q.data.to !== this.o.node) return refuse(400);
      const copy = this.o.membership();
      const asker = copy?.members.find((m) => m.node === q.data.from);
      if (!asker?.peer || !verifySignature(asker.peer.publicKey, questionText(q.data), q.data.signature)) return refuse(403);
      const unsigned: Omit<Answer, 'signature'> = { node: this.o.node, to: q.data.from, nonce: q.data.nonce, reachesControlPlane: await this.o.reaches(), membershipVersion: copy?.version ?? 0 };
      const answer: Answer = { ...unsigned, signature: this.o.keys.sign(answerText(unsigned)) };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    } finally {
      this.inFlight--;
    }
  }
}

/** The body, or undefined once it passes `max` bytes. */
function readBounded(req: IncomingMessage, max: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > max) return resolve(undefined);
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        resolve(undefined);
        req.pause();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(undefined));
  });
}

export function splitHostPort(s: string): { host: string; port: number } {
  const m = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(s);
  if (!m || Number(m[2]) > 65535) throw new Error(`not host:port: ${s}`);
  return { host: m[1]!, port: Number(m[2]) };
}
