/**
 * Name rules. Service, port, volume and node names end up inside store keys and DNS-ish
 * places, so they follow RFC 1123 labels: lowercase, digits, dashes, no slash ever.
 */
export const DNS_LABEL_MAX = 63;
export const dnsLabelPattern = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** Why `name` is not a DNS label, or undefined when it is one. */
export function dnsLabelProblem(name: string, max = DNS_LABEL_MAX): string | undefined {
  if (name.length === 0) return 'it is empty';
  if (name.length > max) return `it is ${name.length} characters long; the limit is ${max}`;
  if (!/^[a-z]/.test(name)) return 'it must start with a lowercase letter';
  if (name.endsWith('-')) return 'it must not end with a dash';
  const bad = /[^-a-z0-9]/.exec(name);
  if (bad) return `it contains ${JSON.stringify(bad[0])}; only lowercase letters, digits and dashes are allowed`;
  return undefined;
}

/** Node names come from hostnames: dots allowed, still no slash. */
export const nodeNamePattern = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** Environment variable names, as POSIX shells accept them. */
export const envNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Label keys: Kubernetes-style, optional `prefix/` then a name. */
export const labelKeyPattern = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * Image references without a registry round trip: `name[:tag][@sha256:hex]`, name made of
 * slash-separated lowercase components (an optional `host[:port]/` first).
 */
export function imageProblem(ref: string): string | undefined {
  if (ref.length === 0) return 'it is empty';
  if (ref.length > 255) return 'it is longer than 255 characters';
  const m = /^([^@]+?)(?::([\w][\w.-]{0,127}))?(?:@sha256:([a-f0-9]{64}))?$/.exec(ref);
  if (!m || m[1] === undefined) return 'it does not have the shape name[:tag][@sha256:digest]';
  const parts = m[1].split('/');
  const first = parts[0] ?? '';
  const hasHost = parts.length > 1 && /[.:]|^localhost$/.test(first);
  for (const [i, p] of parts.entries()) {
    if (i === 0 && hasHost) {
      // Starts and ends alphanumeric: the reference becomes an argument of `ctr images pull`,
      // where a leading '-' would read as an option.
      if (!/^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?(:\d+)?$/.test(p)) return `the registry host ${JSON.stringify(p)} is not valid`;
      continue;
    }
    if (!/^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$/.test(p)) {
      return `the path component ${JSON.stringify(p)} must be lowercase letters and digits separated by . _ or -`;
    }
  }
  return undefined;
}

/**
 * The fully qualified form containerd pulls (`ctr` does not expand Docker Hub short names):
 * `nginx:1.27` → `docker.io/library/nginx:1.27`, `me/app` → `docker.io/me/app:latest`; a
 * reference with a registry host (a dot, a port or `localhost` in its first component) is
 * kept, with `:latest` added when it has neither tag nor digest. Expects a valid reference
 * (imageProblem).
 */
export function qualifiedImage(ref: string): { ref: string; registry: string } {
  const at = ref.indexOf('@');
  const namePart = at < 0 ? ref : ref.slice(0, at);
  const digest = at < 0 ? '' : ref.slice(at);
  const parts = namePart.split('/');
  const first = parts[0] ?? '';
  const hasHost = parts.length > 1 && /[.:]|^localhost$/.test(first);
  const registry = hasHost ? first : 'docker.io';
  const path = hasHost ? parts.slice(1) : parts.length === 1 ? ['library', ...parts] : parts;
  const last = path[path.length - 1] ?? '';
  const tagged = last.includes(':');
  const tail = tagged || digest !== '' ? '' : ':latest';
  return { ref: `${registry}/${path.join('/')}${tail}${digest}`, registry };
}
