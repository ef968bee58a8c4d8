import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { routePath } from 'hono/route';
import { CcaError, isCcaError } from '../core/diagnostics/index.js';
import { accessLog } from './access-log.js';
import type { ServerDeps } from './deps.js';
import { errorResponse } from './errors.js';
import { authenticate, type AuthEnv } from './auth.js';
import { requestId } from './request-id.js';
import { agentRoutes } from './routes/agent.js';
import { LOG_STREAM_PATH, logRoutes } from './routes/logs.js';
import { consoleRoutes } from './routes/console.js';
import { fenceRoutes } from './routes/fence.js';
import { secretRoutes } from './routes/secrets.js';
import { healthRoutes } from './routes/health.js';
import { readRoutes } from './routes/reads.js';
import { serviceRoutes } from './routes/services.js';
import { stateRoutes } from './routes/state.js';
import { queryRoutes } from './routes/query.js';
import { nodeRoutes } from './routes/nodes.js';
import { nodeOpRoutes } from './routes/nodeops.js';
import { tokenRoutes } from './routes/tokens.js';
import { volumeRoutes } from './routes/volumes.js';
import { watchRoutes } from './routes/watch.js';
import { interactiveLane } from '../db/store.js';
import { podLimits } from './limits/pod-limits.js';

/** Streams and long polls would swamp the latency histogram with their waiting time. */
const UNTIMED = new Set(['/v1/watch', '/v1/agent/nodes/:node/assignments', '/v1/replicas/:id/logs', '/v1/agent/nodes/:node/log-requests', '/v1/agent/nodes/:node/log-requests/:id/stream']);

/** The agents' requests (their own lane of the store: the background's). */
const AGENT_PATH = /^\/v1\/agent\//;
/**
 * An agent's keepalive is the liveness the quorum rule counts (docs/fencing.md): it takes
 * the interactive lane, ahead of the agents' bulk (reports, polls, logs) and the
 * controllers' reads. On the background lane, a burst of 3,000 assignments' reports queued
 * 300 nodes' keepalives behind it until the node controller held most of them unreachable.
 */
const KEEPALIVE_PATH = /^\/v1\/agent\/nodes\/[^/]+\/keepalive$/;

/** Refusals by a pod limit, counted in `cca_limit_refusals_total`. */
const LIMIT_CODES = new Set(['CCA-E0642', 'CCA-E0643']);

/**
 * The HTTP API as a plain `(Request) => Response` app: tests call `app.request()` with
 * no server, and every pod serves every route from the store alone.
 */
export function createApp(deps: ServerDeps): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  // Per pod: stream slots per credential, the bytes its watchers hold, each node's write rate.
  const pod = podLimits(deps.limits);
  deps.metrics.trackWatchBytes(() => pod.watchBytes.used);
  const inflight = deps.inflight;
  if (inflight) app.use(async function countInFlight(_c, next) {
    await inflight.track(next);
  });
  app.use(requestId({ generate: deps.newRequestId }));
  if (deps.log) app.use(accessLog({ log: deps.log }));
  app.use(async function measure(c, next) {
    const started = performance.now();
    await next();
    const route = routePath(c) ?? 'unmatched';
    deps.metrics.requests.inc({ route, method: c.req.method, status: String(c.res.status) });
    if (!UNTIMED.has(route)) deps.metrics.latency.observe({ route }, (performance.now() - started) / 1000);
  });
  const limitBody = bodyLimit({
    maxSize: deps.limits.maxBodyBytes,
    onError: () => {
      throw new CcaError('CCA-E0602', { maxBytes: deps.limits.maxBodyBytes });
    },
  });
  // An agent's log stream is no JSON body: the log route bounds it (LOG_LIMITS).
  app.use(async function limitBodies(c, next) {
    return LOG_STREAM_PATH.test(c.req.path) ? next() : limitBody(c, next);
  });
  // People's requests read and write on the store's interactive lane; the agents' (and the
  // controllers', which never come through here) on the background one, so a busy
  // cluster's own machinery does not queue a person's apply behind it (db/postgres/store.ts).
  // Their reads of the state controllers keep come from the pod's read mirror, each at or after
  // the store's head when it was asked (ServerDeps.peopleReads).
  const lane = interactiveLane(deps.store);
  const people: ServerDeps = { ...deps, store: deps.peopleReads ? deps.peopleReads(lane) : lane };
  app.route('/', healthRoutes(people));
  // Node credentials (the agents' requests, keepalives included) are looked up in the read
  // mirror first, as of the newest revision the pod knows committed (handlers/auth.ts principalOf).
  const credentials = deps.agentView ? () => deps.agentView!(0) : undefined;
  const authPeople = authenticate(people.store, deps.auth, credentials);
  const authAgents = authenticate(deps.store, deps.auth, credentials);
  app.use('/v1/*', async function authenticateByLane(c, next) {
    return (AGENT_PATH.test(c.req.path) && !KEEPALIVE_PATH.test(c.req.path) ? authAgents : authPeople)(c, next);
  });
  // Every route names the role it needs in its own definition (test/security/routes.test.ts
  // fails on one that does not): admin ⊇ deployer ⊇ reader, join enrolls, node credentials
  // act for their own node.
  app.route('/', stateRoutes(people));
  app.route('/', queryRoutes(people));
  app.route('/', watchRoutes(deps, pod));
  app.route('/', serviceRoutes(people));
  app.route('/', readRoutes(people));
  app.route('/', volumeRoutes(people));
  app.route('/', fenceRoutes(people));
  app.route('/', secretRoutes(people));
  app.route('/', nodeRoutes(people));
  app.route('/', nodeOpRoutes(people));
  app.route('/', tokenRoutes(people));
  app.route('/', agentRoutes(deps, pod, people.store));
  app.route('/', logRoutes(deps, pod));
  app.route('/', consoleRoutes(people));
  app.notFound((c) => errorResponse(new CcaError('CCA-E0604', { method: c.req.method, path: c.req.path }), c));
  app.onError((err, c) => {
    if (isCcaError(err) && LIMIT_CODES.has(err.code)) deps.metrics.refusals.inc({ code: err.code });
    return errorResponse(err, c);
  });
  return app;
}
