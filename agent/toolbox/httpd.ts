/**
 * The toolbox image's `httpd` (image `ccattler/toolbox:1`): a static file server that takes
 * busybox httpd's flags, so a spec runs the same on the process runtime of a machine that
 * has nothing but Node and on containerd, where the image is busybox. Self-contained (node:
 * imports only): it is a workload, not part of the agent.
 *
 *   httpd [-f] [-v] [-p [ADDR:]PORT] [-h HOME]
 *
 * Serves GET and HEAD from HOME (default: the working directory), `index.html` for a
 * directory, 404 for anything else; never leaves HOME (no `..`, no symlink out). It always
 * runs in the foreground (-f is accepted for busybox compatibility) and exits on SIGTERM.
 */
import { createReadStream, realpathSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.htm': 'text/html; charset=utf-8', '.txt': 'text/plain; charset=utf-8',
  '.css': 'text/css', '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.jpg': 'image/jpeg', '.gif': 'image/gif', '.ico': 'image/x-icon',
};

function usage(message: string): never {
  process.stderr.write(`httpd: ${message}\nusage: httpd [-f] [-v] [-p [ADDR:]PORT] [-h HOME]\n`);
  process.exit(1);
}

interface Options {
  host: string | undefined;
  port: number;
  home: string;
  verbose: boolean;
}

function parse(argv: readonly string[]): Options {
  const opts: Options = { host: undefined, port: 80, home: '.', verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-f') continue;
    if (a === '-v' || a === '-vv') opts.verbose = true;
    else if (a === '-p' || a === '-h') {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      if (a === '-h') opts.home = v;
      else {
        const colon = v.lastIndexOf(':');
        const port = Number(colon >= 0 ? v.slice(colon + 1) : v);
        if (!Number.isInteger(port) || port < 1 || port > 65_535) usage(`bad port in -p ${v}`);
        opts.port = port;
        if (colon >= 0) opts.host = v.slice(0, colon).replace(/^\[|\]$/g, '');
      }
    } else usage(`unknown option ${a}`);
  }
  return opts;
}

const opts = parse(process.argv.slice(2));
let home: string;
try {
  home = realpathSync(resolve(opts.home));
} catch {
  usage(`home ${opts.home} does not exist`);
}

/** The file a URL path names inside home, or undefined (outside home, missing, not a file). */
function fileFor(urlPath: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  let path = resolve(home, `.${decoded.startsWith('/') ? decoded : `/${decoded}`}`);
  try {
    if (statSync(path).isDirectory()) path = join(path, 'index.html');
    const real = realpathSync(path);
    if (real !== home && !real.startsWith(home + sep)) return undefined;
    return statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const file = req.method === 'GET' || req.method === 'HEAD' ? fileFor(path) : undefined;
  if (opts.verbose) process.stderr.write(`${req.socket.remoteAddress ?? '-'} ${req.method} ${path} ${file ? 200 : 404}\n`);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(501, { 'content-type': 'text/plain' }).end('501 Not Implemented\n');
    return;
  }
  if (!file) {
    res.writeHead(404, { 'content-type': 'text/html' }).end('<HTML><HEAD><TITLE>404 Not Found</TITLE></HEAD>\n<BODY><H1>404 Not Found</H1>\nThe requested URL was not found\n</BODY></HTML>\n');
    return;
  }
  res.writeHead(200, { 'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream', 'content-length': statSync(file).size });
  if (req.method === 'HEAD') res.end();
  else createReadStream(file).on('error', () => res.destroy()).pipe(res);
});

server.on('error', (e) => {
  process.stderr.write(`httpd: ${e.message}\n`);
  process.exit(1);
});
server.listen(opts.port, opts.host);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
