import net from 'node:net';

/**
 * Joins a client to its upstream both ways; each is tracked in `sockets` while open (so a cut can
 * destroy them), and either one closing closes the other.
 */
export function splice(client: net.Socket, upstream: net.Socket, sockets: Set<net.Socket>): void {
  for (const s of [client, upstream]) {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  }
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
}

/**
 * A TCP relay in front of a server the demo does not own (DATABASE_URL, a container): close()
 * stops listening and drops every connection, so clients meet exactly what a stopped server
 * gives them (connection refused), and open() listens again on the same port.
 */
export class TcpGate {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    private readonly host: string,
    private readonly target: number,
  ) {}

  async open(): Promise<number> {
    const server = net.createServer((client) => {
      splice(client, net.connect(this.target, this.host), this.sockets);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
    return this.port;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise((r) => server.close(r));
  }
}
