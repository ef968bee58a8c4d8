import { createServer } from 'node:https';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';

export interface RunningHttp {
  url: string;
  port: number;
  /** Stop accepting; requests in flight get `graceMs` to finish, then every connection is cut. */
  close(graceMs?: number): Promise<void>;
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
          close: (graceMs = 0) =>
            new Promise<void>((done) => {
              const s = server as unknown as { closeAllConnections?: () => void; closeIdleConnections?: () => void };
              server.close(() => {
                clearTimeout(cut);
                done();
              });
              // Idle keep-alive sockets go now; busy ones when their request ends, or at the bound
              // (open watch streams would otherwise keep close() waiting forever).
              s.closeIdleConnections?.();
              const cut = setTimeout(() => s.closeAllConnections?.(), graceMs);
              cut.unref();
            }),
        });
      });
      server.on('error', reject);
    } catch (e) {
      reject(e);
    }
  });
}
