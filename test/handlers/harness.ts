import { MemoryStore } from '../../db/memory.js';
import type { Store } from '../../db/store.js';
import { createApp } from '../../handlers/app.js';
import { defaultLimits, type ServerDeps } from '../../handlers/deps.js';
import { ServerMetrics } from '../../handlers/metrics.js';
import { requestIdGenerator } from '../../handlers/request-id.js';
import { parseKeyring, SecretBox } from '../../handlers/secret-box.js';

/** A fixed key for tests: secret values are sealed at rest as in production. */
export const TEST_SECRET_KEY = `test:${Buffer.alloc(32, 7).toString('base64')}`;
export const TEST_SECRET_BOX = new SecretBox(parseKeyring(TEST_SECRET_KEY, 'test'));

export function testDeps(store: Store = new MemoryStore(), overrides: Partial<ServerDeps> = {}): ServerDeps {
  return {
    store,
    metrics: new ServerMetrics(),
    limits: { ...defaultLimits, heartbeatMs: 50, longPollMs: 500 },
    newRequestId: requestIdGenerator(0),
    version: 'test',
    auth: { openReads: true },
    secrets: TEST_SECRET_BOX,
    ...overrides,
  };
}

export function testApp(deps: ServerDeps = testDeps()) {
  return { app: createApp(deps), deps };
}

export const ADMIN = `cca_admin_${'a'.repeat(43)}`;
export const JOIN = `cca_join_${'j'.repeat(43)}`;

/** An app with known admin and join tokens and reads closed, plus request helpers. */
export async function securedApp(store: Store = new MemoryStore(), overrides: Partial<ServerDeps> = {}) {
  const { ensureTokens } = await import('../../handlers/auth.js');
  await ensureTokens(store, { admin: ADMIN, join: JOIN });
  const deps = testDeps(store, { auth: { openReads: false }, ...overrides });
  const app = createApp(deps);
  const call = (method: string, path: string, opts: { token?: string; json?: unknown; text?: string; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    } else if (opts.text !== undefined) {
      headers['content-type'] ??= 'text/x-cca';
      body = opts.text;
    }
    return app.request(path, { method, headers, ...(body !== undefined ? { body } : {}) });
  };
  return { app, deps, store, call };
}

/** Read SSE frames from a streaming response until `stop` says enough. */
export async function readSse(
  res: Response,
  stop: (events: { event: string; id?: string; data: string }[]) => boolean,
  timeoutMs = 5_000,
): Promise<{ event: string; id?: string; data: string }[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: { event: string; id?: string; data: string }[] = [];
  let buf = '';
  const deadline = Date.now() + timeoutMs;
  try {
    while (!stop(events) && Date.now() < deadline) {
      const chunk = await Promise.race([
        reader.read(),
        new Promise<{ done: true; value: undefined }>((r) => setTimeout(() => r({ done: true, value: undefined }), deadline - Date.now())),
      ]);
      if (chunk.done) break;
      buf += decoder.decode(chunk.value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const e: { event: string; id?: string; data: string } = { event: 'message', data: '' };
        for (const line of frame.split('\n')) {
          if (line.startsWith(':')) {
            e.event = 'comment';
            e.data = line.slice(1).trim();
          } else if (line.startsWith('event: ')) e.event = line.slice(7);
          else if (line.startsWith('id: ')) e.id = line.slice(4);
          else if (line.startsWith('data: ')) e.data += line.slice(6);
        }
        events.push(e);
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return events;
}
