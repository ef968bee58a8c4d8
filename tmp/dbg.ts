import { createApp } from '../handlers/app.js';
import { MemoryStore } from '../db/memory.js';
import { ServerMetrics } from '../handlers/metrics.js';
import { defaultLimits } from '../handlers/deps.js';
const lines: unknown[] = [];
const log = { debug: (f: object, m: string) => lines.push(['debug', f, m]), info: (f: object, m: string) => lines.push(['info', f, m]), error: (f: object, m: string) => lines.push(['error', f, m]) };
const app = createApp({ store: new MemoryStore(), metrics: new ServerMetrics(), limits: defaultLimits, newRequestId: () => 'r1', version: 'x', auth: { openReads: false }, log });
const r = await app.request('/v1/replicas/abc?token=x', { headers: { authorization: 'Bearer foo' } });
console.log(r.status, JSON.stringify(lines));
