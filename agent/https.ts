/**
 * HTTPS to a server whose certificate a private CA signed: the agent's `--ca` and the
 * CLI's `--ca` (cli/ reuses this module, as it reuses the rest of agent/ for `cca agent`).
 *
 * Node 20's global fetch (its bundled undici) takes no CA per request, and the `undici`
 * package is not one of our dependencies; so a CA-trusting `fetch` is built on
 * `node:https`, with a fetch-shaped signature so both clients keep one code path.
 */
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { rootCertificates } from 'node:tls';
import { CERT_REFUSAL_CODES } from '../core/tls-codes.js';
import { CcaError, messageOf } from '../core/diagnostics/index.js';

const UNTRUSTED = CERT_REFUSAL_CODES;

/** The TLS reason a failed request carries (fetch wraps it in `cause`), when it is a trust failure. */
export function untrustedReason(e: unknown): string | undefined {
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string' && UNTRUSTED.has(code)) {
      const message = (c as { message?: unknown }).message;
      return typeof message === 'string' && message !== '' ? `${code} (${message})` : code;
    }
  }
  return undefined;
}

/**
 * A scheme that does not match the server's, said plainly: https:// to a plain HTTP server
 * fails in OpenSSL's words ("wrong version number"), http:// to an HTTPS server as a socket
 * the other side closed. Undefined for any other failure.
 */
export function schemeMismatch(e: unknown, url: string): string | undefined {
  const codes: string[] = [];
  const texts: string[] = [];
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    texts.push(String((c as { message?: unknown }).message ?? ''));
  }
  if (url.startsWith('https:') && (codes.includes('ERR_SSL_WRONG_VERSION_NUMBER') || texts.some((t) => /wrong version number/.test(t)))) {
    return 'the server did not answer in TLS: if it serves plain HTTP, use an http:// URL';
  }
  if (url.startsWith('http:') && (codes.includes('UND_ERR_SOCKET') || codes.includes('ECONNRESET'))) {
    return `${codes[0]} (the connection was closed without an answer: if the server serves HTTPS, use an https:// URL)`;
  }
  return undefined;
}

/**
 * A CA file given with `--ca`: PEM, one or more certificates. Read once at start, so a
 * wrong path is a coded error before the first request, naming the file.
 */
export function readCaFile(file: string, what = '--ca'): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CcaError('CCA-E0004', { what, file, reason: messageOf(e), expected: 'the CA certificate that signed the server certificate' });
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    throw new CcaError('CCA-E0004', { what, file, reason: 'it holds no PEM certificate (-----BEGIN CERTIFICATE-----)', expected: 'the CA certificate that signed the server certificate' });
  }
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (e) {
      throw new CcaError('CCA-E0004', { what, file, reason: `a certificate in it is damaged: ${messageOf(e)}`, expected: 'the CA certificate that signed the server certificate' });
    }
  }
  return text;
}

/** Statuses whose Response must have no body (the constructor throws otherwise). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * A `fetch` that trusts `ca` in addition to the system roots for https: URLs (http: URLs
 * go to the global fetch unchanged). Failures are thrown the way fetch throws them — a
 * TypeError whose `cause` carries the code — so callers classify both alike.
 */
export function fetchTrusting(ca: string): typeof fetch {
  // keepAlive: the agent's long polls and keepalives reuse connections instead of a
  // handshake each; Node unrefs idle sockets, so they never hold a process open.
  const agent = new https.Agent({ keepAlive: true, ca: [...rootCertificates, ca] });
  const trusting = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    // Both clients call fetch(url, init); a Request object's own method, headers and body
    // would be silently dropped below, so it is refused rather than half-honoured.
    if (input instanceof Request) return Promise.reject(new TypeError('fetchTrusting takes a URL and an init, not a Request'));
    const url = new URL(input);
    if (url.protocol !== 'https:') return globalThis.fetch(input, init);
    return request(agent, url, init);
  };
  return trusting as typeof fetch;
}

function request(agent: https.Agent, url: URL, init: RequestInit): Promise<Response> {
  const signal = init.signal ?? undefined;
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => (headers[name] = value));
  const body = init.body;
  if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof ReadableStream)) {
    // JSON text, or the agent's log stream; anything else would be a new caller to teach this module.
    return Promise.reject(new TypeError('fetchTrusting sends string or stream bodies only'));
  }
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    // No Accept-Encoding is sent, so answers come uncompressed (undici's fetch would inflate them).
    const req = https.request(url, { method: init.method ?? 'GET', headers, agent });
    const onAbort = () => req.destroy(signal!.reason as Error);
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (e) => {
      signal?.removeEventListener('abort', onAbort);
      reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: e }));
    });
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 502;
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        if (v === undefined) continue;
        for (const one of Array.isArray(v) ? v : [v]) h.append(k, one);
      }
      // Aborting after the headers (a watch ended with Ctrl-C) ends the body stream.
      if (NULL_BODY.has(status)) {
        res.resume();
        signal?.removeEventListener('abort', onAbort);
        resolve(new Response(null, { status, statusText: res.statusMessage ?? '', headers: h }));
        return;
      }
      res.once('close', () => signal?.removeEventListener('abort', onAbort));
      const stream = Readable.toWeb(res) as ReadableStream<Uint8Array>;
      resolve(new Response(stream, { status, statusText: res.statusMessage ?? '', headers: h }));
    });
    if (body instanceof ReadableStream) {
      // A log stream (agent/log-server.ts): written as it is read; a destroyed request ends it.
      Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>).on('error', () => req.destroy()).pipe(req);
    } else {
      req.end(body ?? undefined);
    }
  });
}
