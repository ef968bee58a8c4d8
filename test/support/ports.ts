import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Where test servers' ports are picked: below the kernel's ephemeral range (see freePort). */
const LOWEST = 20_000;

/** The first port of the kernel's range for outgoing connections' source ports (32768 by default). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : undefined));
    });
  });
}

/**
 * A TCP port on 127.0.0.1 that is free now, chosen below the ephemeral range: a port in that
 * range can become the source port of any outgoing connection the moment its listener closes,
 * so a server restarted on the same port (Postgres in test/db/linearizability.test.ts, with
 * three test files' worth of loopback connections around it) could find it taken. Random in
 * [20000, ephemeral low), tried until one binds; the kernel's own pick if none does.
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow();
  for (let i = 0; high - LOWEST > 1_000 && i < 50; i++) {
    const port = await canListen(LOWEST + Math.floor(Math.random() * (high - LOWEST)));
    if (port !== undefined) return port;
  }
  const port = await canListen(0);
  if (port === undefined) throw new Error('no free TCP port on 127.0.0.1');
  return port;
}
