import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { CcaError } from '../core/diagnostics/index.js';
import type { AgentCore } from './core/index.js';

type Vitals = ReturnType<AgentCore['vitals']> & { peerQuestions: number };

/**
 * The agent's Prometheus metrics, read from its core at scrape time: workloads by state, the
 * fence margin, the keepalive age, the peer questions sent, and Node's process defaults. Its own registry.
 */
export function agentRegistry(vitals: () => Vitals): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const workloads: Gauge<'state'> = new Gauge({
    name: 'cca_agent_workloads',
    help: 'Replicas this agent holds, by state (pending, starting, running, exited, …).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      workloads.reset();
      for (const [state, n] of Object.entries(vitals().slots)) workloads.set({ state }, n);
    },
  });
  const margin: Gauge = new Gauge({
    name: 'cca_agent_fence_margin_seconds',
    help: 'Seconds until this agent would stop its workloads for want of a keepalive (negative: past the fence point); NaN before its first lease.',
    registers: [registry],
    collect() {
      const ms = vitals().fenceMarginMs;
      margin.set(ms === undefined ? Number.NaN : ms / 1000);
    },
  });
  const questions: Counter = new Counter({
    name: 'cca_agent_peer_questions_total',
    help: 'Questions this agent sent its peers while it could not reach the control plane (one per member asked per round; docs/fencing.md).',
    registers: [registry],
    collect() {
      questions.reset();
      questions.inc(vitals().peerQuestions);
    },
  });
  const age: Gauge = new Gauge({
    name: 'cca_agent_keepalive_age_seconds',
    help: 'Seconds since the last successful lease keepalive was sent (+Inf: none yet, or the lease is lost).',
    registers: [registry],
    collect() {
      age.set(vitals().sinceKeepaliveMs / 1000);
    },
  });
  const fenced: Gauge = new Gauge({
    name: 'cca_agent_fenced',
    help: '1 while the agent has fenced (stopped its workloads until it holds a lease again), else 0.',
    registers: [registry],
    collect() {
      fenced.set(vitals().fenced ? 1 : 0);
    },
  });
  return registry;
}

/** `--metrics-listen HOST:PORT` split (IPv6 in brackets); CCA-E0731 when it is not that. */
export function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  if (!m || port > 65_535) throw new CcaError('CCA-E0731', { value: JSON.stringify(value) });
  return { host: m[1] ?? m[2]!, port };
}

/** `GET /metrics` on its own listener (off unless --metrics-listen): nothing else is served there. */
export async function serveMetrics(registry: Registry, listen: string): Promise<{ url: string; close(): Promise<void> }> {
  const { host, port } = parseListen(listen);
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served here\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new CcaError('CCA-E0732', { address: listen, reason: e.message })));
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  const bound = typeof addr === 'object' && addr ? addr.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
