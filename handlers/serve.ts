import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';

export interface RunningHttp {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serve an app on host:port (port 0 = any free one). Long polls and watches need no timeout. */
export async function listen(app: Hono<never> | Hono<any>, opts: { port: number; host?: string }): Promise<RunningHttp> {
  const host = opts.host ?? '127.0.0.1';
  return await new Promise((resolve, reject) => {
    let server: ServerType;
    try {
      server = serve({ fetch: app.fetch, port: opts.port, hostname: host }, (info) => {
        const url = `http://${host.includes(':') ? `[${host}]` : host}:${info.port}`;
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
