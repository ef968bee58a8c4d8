import { z } from 'zod';

/**
 * Reading a replica's output (`cca logs`, `GET /v1/replicas/{id}/logs`): the request the
 * server relays to the node's agent, the frames the agent streams back (newline-delimited
 * JSON, relayed as they are to the client), and the bounds on one request.
 */

/** "90s", "5m", "1h", "1500ms" → ms. */
export function parseDuration(s: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h)$/.exec(s.trim());
  if (!m) return undefined;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

/** `--since`: a duration back from `now` ("10m") or a time ("2026-12-01T10:00:00Z") → epoch ms. */
export function parseSince(s: string, now: number): number | undefined {
  const d = parseDuration(s);
  if (d !== undefined) return now - d;
  if (!/^\d{4}-\d\d-\d\dT/.test(s)) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

/** What one request may cost a node. */
export const LOG_LIMITS = {
  /** Largest `tail`. */
  maxTailLines: 100_000,
  /** Bytes one request streams at most (what it reads of the files before the follow included). */
  maxBytes: 32 * 1024 * 1024,
  /** How long one `follow` lasts at most; the client asks again to go on. */
  maxFollowMs: 60 * 60 * 1000,
  /** Log requests one agent serves at once; more are refused (CCA-E0562). */
  maxStreams: 8,
  /** How long the server waits for the agent to take a request and answer. */
  answerWithinMs: 10_000,
} as const;

const flag = z.enum(['0', '1', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/** The public route's query: the CLI's flags, the same names. */
export const logsQuerySchema = z.strictObject({
  follow: flag.optional(),
  tail: z.coerce.number().int().min(0).max(LOG_LIMITS.maxTailLines).optional(),
  /** A duration back from now ("10m") or an RFC 3339 time. */
  since: z.string().max(64).optional(),
  previous: flag.optional(),
});

/** A request as the agent receives it (the since already resolved to epoch ms by the server). */
export const logRequestSchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{32}$/),
  replica: z.string().min(1).max(253),
  follow: z.boolean(),
  tail: z.int().min(0).max(LOG_LIMITS.maxTailLines).optional(),
  sinceMs: z.int().min(0).optional(),
  previous: z.boolean(),
});
export type LogRequest = z.infer<typeof logRequestSchema>;

/** A coded diagnostic as it travels (core/diagnostics/types.ts `Diagnostic`). */
const diagnosticShape = z.object({
  code: z.string().regex(/^CCA-E\d{4}$/),
  blame: z.enum(['user', 'environment', 'external', 'bug']),
  title: z.string(),
  message: z.string(),
  fix: z.string(),
  params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  requestId: z.string().optional(),
});

/**
 * One line of the stream: the first says whether the agent serves the request; then output
 * text (whole lines where possible) of one stream; the last says why it ended when it was not
 * simply the end of the output (a bound reached).
 */
export const logFrameSchema = z.union([
  z.strictObject({ serving: z.strictObject({ replica: z.string(), node: z.string(), files: z.array(z.string()) }) }),
  z.strictObject({ refused: diagnosticShape }),
  z.strictObject({ stream: z.enum(['stdout', 'stderr']), text: z.string() }),
  z.strictObject({ end: diagnosticShape }),
]);
export type LogFrame = z.infer<typeof logFrameSchema>;
