import { closest } from './suggest.js';
import type { SpecIssue } from './issues.js';
import type { ServiceSpec } from './service.js';

export interface ServiceSetOptions {
  /** Names of services already in the store, which `after` may refer to. */
  existing?: Iterable<string>;
  /**
   * The `after` lists of services already stored (by name). Those not replaced by the set
   * join the dependency graph, so a cycle through a stored service is caught at apply time.
   */
  storedAfter?: ReadonlyMap<string, readonly string[]>;
}

/** Rules across the services applied together: unique names, known `after` targets, no cycles. */
export function validateServiceSet(specs: readonly ServiceSpec[], opts: ServiceSetOptions = {}): SpecIssue[] {
  const out: SpecIssue[] = [];
  const seen = new Set<string>();
  for (const s of specs) {
    if (seen.has(s.name)) out.push({ code: 'CCA-E0309', params: { name: s.name }, path: ['name'], service: s.name });
    seen.add(s.name);
  }
  const known = new Set([...seen, ...(opts.existing ?? [])]);
  for (const s of specs) {
    for (const [i, target] of s.after.entries()) {
      if (known.has(target)) continue;
      const near = closest(target, [...known]);
      const hint = near ? `did you mean \`${near}\`?` : 'apply the service it depends on in the same set, or remove the dependency';
      out.push({ code: 'CCA-E0305', params: { service: s.name, target, hint }, path: ['after', i], service: s.name });
    }
  }
  return [...out, ...checkAllowClients(specs, known), ...findCycles(specs, opts.storedAfter)];
}

/**
 * `allow from service X` names a service defined in the set or already applied (CCA-E0323):
 * a misspelt client would otherwise be a silent deny. Apply the clients first or together.
 */
function checkAllowClients(specs: readonly ServiceSpec[], known: ReadonlySet<string>): SpecIssue[] {
  const out: SpecIssue[] = [];
  for (const s of specs) {
    for (const [i, rule] of s.network.allow.entries()) {
      if (known.has(rule.service)) continue;
      const near = closest(rule.service, [...known]);
      const hint = near ? `did you mean \`${near}\`?` : `apply service ${rule.service} first or in the same set, or remove the rule`;
      out.push({ code: 'CCA-E0323', params: { service: s.name, client: rule.service, hint }, path: ['network', 'allow', i, 'service'], service: s.name });
    }
  }
  return out;
}

/**
 * Every elementary cycle reached by a depth-first walk, once each, named from its smallest
 * member (`a → b → a`). Iterative, so a long chain of services cannot overflow the stack.
 * Stored services (not replaced by `specs`) take part with their stored edges; a cycle is
 * reported against the first of its members that is in `specs` (the change that closed it).
 */
export function findCycles(specs: readonly ServiceSpec[], stored: ReadonlyMap<string, readonly string[]> = new Map()): SpecIssue[] {
  const edges = new Map<string, string[]>();
  for (const s of specs) if (!edges.has(s.name)) edges.set(s.name, [...new Set(s.after)].filter((t) => t !== undefined));
  const submitted = new Set(edges.keys());
  for (const [name, after] of stored) if (!edges.has(name)) edges.set(name, [...new Set(after)]);
  const state = new Map<string, 'active' | 'done'>();
  const reported = new Set<string>();
  const out: SpecIssue[] = [];
  for (const root of [...edges.keys()].sort()) {
    if (state.has(root)) continue;
    const stack: { node: string; next: number }[] = [{ node: root, next: 0 }];
    state.set(root, 'active');
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const targets = edges.get(top.node) ?? [];
      if (top.next >= targets.length) {
        state.set(top.node, 'done');
        stack.pop();
        continue;
      }
      const t = targets[top.next++]!;
      if (!edges.has(t)) continue; // unknown targets are reported separately
      const st = state.get(t);
      if (st === undefined) {
        state.set(t, 'active');
        stack.push({ node: t, next: 0 });
      } else if (st === 'active') {
        const from = stack.findIndex((f) => f.node === t);
        const members = stack.slice(from).map((f) => f.node);
        const key = [...members].sort().join(',');
        if (reported.has(key)) continue;
        reported.add(key);
        const start = members.indexOf([...members].sort()[0]!);
        const rotated = [...members.slice(start), ...members.slice(0, start)];
        const owner = rotated.find((m) => submitted.has(m));
        if (owner === undefined) continue; // only stored services: not this apply's doing
        const cycle = [...rotated, rotated[0]!].join(' → ');
        out.push({ code: 'CCA-E0306', params: { cycle }, path: ['after'], service: owner });
      }
    }
  }
  return out;
}
