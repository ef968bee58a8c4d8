import { readFileSync } from 'node:fs';
import net from 'node:net';
import { expect, test } from 'vitest';
import { freePort } from './ports.js';

test('freePort picks free ports below the ephemeral range, so a server restarted on one finds it still free', async () => {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    expect(port).toBeGreaterThanOrEqual(20_000);
    expect(port).toBeLessThan(low);
    const srv = net.createServer();
    await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((r) => srv.close(r));
  }
});
