import { createServer } from 'node:https';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';

export interface RunningHttp {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serve an app on host:port (port 0 = any free one), over HTTPS (HTTP/1.1) when given a
 * certificate and key. Long polls and watches need no timeout.
 */
export async function listen(app: Hono<never> | Hono<any>, opts: { port: number; host?: string; tls?: { cert: string; key: string } }): Promise<RunningHttp> {
  const host = opts.host ?? '127.0.0.1';
  const tls = opts.tls ? { createServer, serverOptions: { cert: opts.tls.cert, key: opts.tls.key } } : {};
  return await new Promise((resolve, reject) => {
    let server: ServerType;
    try {
      server = serve({ fetch: app.fetch, port: opts.port, hostname: host, ...tls }, (info) => {
        const url = `${opts.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${info.port}`;
        resolve({
          url,
          port: info.port,
          close: () =>
            new Promise<void>((done) => {
              // Open watch streams would keep close() waiting forever.
              (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
              server.close(() => done());
            }),
        });
      });
      server.on('error', reject);
    } catch (e) {
      reject(e);
    }
  });
}
