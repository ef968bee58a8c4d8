/**
 * npx tsx bench/heap-diff.ts A.heapsnapshot B.heapsnapshot [--top 30] [--retainers GROUP] [--paths GROUP]
 *
 * Compares two V8 heap snapshots of one process (bench:soak's BENCH_HEAP_SNAPSHOTS): object ids
 * are stable within a process, so the objects in B whose id A lacks are the ones allocated
 * since and still alive. Prints, per group (constructor name, or the kind of a string, array,
 * closure or code), the live count and bytes in each snapshot and what is new in B; with
 * --retainers, which groups and fields hold B's new objects of GROUP; with --paths GROUP, the
 * shortest chain from the GC roots to a few of them (what keeps them alive, not only who points
 * at them). Last line: JSON.
 *
 * The snapshots are read as bytes, not with JSON.parse: a snapshot of a few hundred MiB of heap
 * is larger than the longest string V8 allows.
 */
import { readFileSync } from 'node:fs';
import { numberArg } from './support/usage.js';

interface Meta {
  node_fields: string[];
  node_types: [string[], ...unknown[]];
  edge_fields: string[];
  edge_types: [string[], ...unknown[]];
}

interface Snapshot {
  meta: Meta;
  nodes: Float64Array;
  edges: Float64Array;
  strings: string[];
}

/** The integers of the JSON array that starts at `from` (just after its '['). */
function readNumbers(buf: Buffer, from: number): { values: Float64Array; end: number } {
  let cap = 1 << 20;
  let values = new Float64Array(cap);
  let n = 0;
  let cur = 0;
  let inNum = false;
  let i = from;
  for (; i < buf.length; i++) {
    const c = buf[i]!;
    if (c >= 48 && c <= 57) {
      cur = cur * 10 + (c - 48);
      inNum = true;
      continue;
    }
    if (inNum) {
      if (n === cap) {
        const next = new Float64Array((cap *= 2));
        next.set(values);
        values = next;
      }
      values[n++] = cur;
      cur = 0;
      inNum = false;
    }
    if (c === 93 /* ] */) break;
  }
  return { values: values.subarray(0, n), end: i };
}

function readStrings(buf: Buffer, from: number): string[] {
  const out: string[] = [];
  let i = from;
  for (;;) {
    while (i < buf.length && buf[i] !== 34 /* " */ && buf[i] !== 93) i++;
    if (i >= buf.length || buf[i] === 93) return out;
    const start = i++;
    while (buf[i] !== 34) i += buf[i] === 92 /* \ */ ? 2 : 1;
    out.push(JSON.parse(buf.toString('utf8', start, i + 1)) as string);
    i++;
  }
}

function load(file: string): Snapshot {
  const buf = readFileSync(file);
  const at = (key: string, from = 0) => {
    const i = buf.indexOf(key, from);
    if (i < 0) throw new Error(`${file}: no ${key} (not a V8 heap snapshot?)`);
    return i + key.length;
  };
  const nodesAt = at('"nodes":[');
  const head = buf.toString('utf8', 0, nodesAt - '"nodes":['.length).replace(/,\s*$/, '') + '}';
  const meta = (JSON.parse(head) as { snapshot: { meta: Meta } }).snapshot.meta;
  const nodes = readNumbers(buf, nodesAt);
  const edges = readNumbers(buf, at('"edges":[', nodes.end));
  const strings = readStrings(buf, at('"strings":[', edges.end));
  return { meta, nodes: nodes.values, edges: edges.values, strings };
}

/** Reads a snapshot's nodes by field name. */
function view(s: Snapshot) {
  const f = s.meta.node_fields;
  const width = f.length;
  const [TYPE, NAME, ID, SIZE, EDGES] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((k) => f.indexOf(k));
  const types = s.meta.node_types[0];
  const count = s.nodes.length / width;
  const group = (n: number): string => {
    const type = types[s.nodes[n * width + TYPE!]!]!;
    const name = s.strings[s.nodes[n * width + NAME!]!] ?? '?';
    if (type === 'object' || type === 'native') return name.length > 60 ? `${name.slice(0, 60)}…` : name;
    if (type === 'closure') return `(closure ${name.slice(0, 40)})`;
    return `(${type})`;
  };
  return {
    count,
    width,
    group,
    id: (n: number) => s.nodes[n * width + ID!]!,
    size: (n: number) => s.nodes[n * width + SIZE!]!,
    edgeCount: (n: number) => s.nodes[n * width + EDGES!]!,
  };
}

/**
 * For up to `limit` new objects of `group` (spread over them, not the first few), the shortest
 * chain of strong edges from the snapshot's root: a breadth-first walk records each object's
 * first parent. Each step prints as `group.field`.
 */
function rootPaths(s: Snapshot, v: ReturnType<typeof view>, isNew: Uint8Array, group: string, limit: number): string[][] {
  const ef = s.meta.edge_fields;
  const ew = ef.length;
  const [ETYPE, ENAME, ETO] = ['type', 'name_or_index', 'to_node'].map((k) => ef.indexOf(k));
  const etypes = s.meta.edge_types[0];
  const firstEdge = new Float64Array(v.count + 1);
  for (let n = 0; n < v.count; n++) firstEdge[n + 1] = firstEdge[n]! + v.edgeCount(n) * ew;
  const parent = new Int32Array(v.count).fill(-1);
  const via = new Float64Array(v.count);
  const queue = new Int32Array(v.count);
  let head = 0;
  let tail = 0;
  queue[tail++] = 0;
  parent[0] = 0;
  while (head < tail) {
    const from = queue[head++]!;
    for (let e = firstEdge[from]!; e < firstEdge[from + 1]!; e += ew) {
      if (etypes[s.edges[e + ETYPE!]!] === 'weak') continue;
      const to = s.edges[e + ETO!]! / v.width;
      if (parent[to] !== -1) continue;
      parent[to] = from;
      via[to] = e;
      queue[tail++] = to;
    }
  }
  const matches: number[] = [];
  for (let n = 0; n < v.count; n++) if (isNew[n] && parent[n] !== -1 && v.group(n) === group) matches.push(n);
  const picked = matches.filter((_, i) => i % Math.max(1, Math.floor(matches.length / limit)) === 0).slice(0, limit);
  return picked.map((n) => {
    const chain: string[] = [];
    for (let at = n; at !== 0 && chain.length < 40; at = parent[at]!) {
      const e = via[at]!;
      const type = etypes[s.edges[e + ETYPE!]!]!;
      const name = s.edges[e + ENAME!]!;
      const label = type === 'element' || type === 'hidden' ? `[${name}]` : (s.strings[name] ?? '?');
      chain.push(`${v.group(parent[at]!)}.${label}`);
    }
    return chain.reverse();
  });
}

interface Row {
  group: string;
  countA: number;
  bytesA: number;
  countB: number;
  bytesB: number;
  newCount: number;
  newBytes: number;
}

function main() {
  const args = process.argv.slice(2);
  const files = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
  if (files.length !== 2) {
    process.stderr.write('usage: npx tsx bench/heap-diff.ts A.heapsnapshot B.heapsnapshot [--top 30] [--retainers GROUP] [--paths GROUP]\n');
    process.exit(2);
  }
  const top = numberArg('top', 30);
  const retainersOf = args.includes('--retainers') ? args[args.indexOf('--retainers') + 1] : undefined;
  const pathsOf = args.includes('--paths') ? args[args.indexOf('--paths') + 1] : undefined;
  const A = view(load(files[0]!));
  const rows = new Map<string, Row>();
  const row = (g: string) => {
    let r = rows.get(g);
    if (!r) rows.set(g, (r = { group: g, countA: 0, bytesA: 0, countB: 0, bytesB: 0, newCount: 0, newBytes: 0 }));
    return r;
  };
  const idsA = new Set<number>();
  for (let n = 0; n < A.count; n++) {
    idsA.add(A.id(n));
    const r = row(A.group(n));
    r.countA++;
    r.bytesA += A.size(n);
  }
  const sB = load(files[1]!);
  const B = view(sB);
  const isNew = new Uint8Array(B.count);
  for (let n = 0; n < B.count; n++) {
    const r = row(B.group(n));
    r.countB++;
    r.bytesB += B.size(n);
    if (!idsA.has(B.id(n))) {
      isNew[n] = 1;
      r.newCount++;
      r.newBytes += B.size(n);
    }
  }
  const mb = (b: number) => (b / 2 ** 20).toFixed(1);
  const sorted = [...rows.values()].sort((x, y) => y.bytesB - y.bytesA - (x.bytesB - x.bytesA)).slice(0, top);
  const total = (k: 'bytesA' | 'bytesB' | 'newBytes') => [...rows.values()].reduce((s, r) => s + r[k], 0);
  console.log(`live bytes: A ${mb(total('bytesA'))} MiB (${A.count} objects), B ${mb(total('bytesB'))} MiB (${B.count}), new in B ${mb(total('newBytes'))} MiB`);
  console.log('group                                                         count A    MiB A    count B    MiB B   new count  new MiB');
  for (const r of sorted) {
    console.log(`${r.group.padEnd(60).slice(0, 60)}  ${String(r.countA).padStart(8)}  ${mb(r.bytesA).padStart(7)}  ${String(r.countB).padStart(9)}  ${mb(r.bytesB).padStart(7)}  ${String(r.newCount).padStart(10)}  ${mb(r.newBytes).padStart(7)}`);
  }
  let retainers: Record<string, number> = {};
  if (retainersOf) {
    // Walk B's edges once: an edge from node `from` to a new node of the group is one retainer.
    const ef = sB.meta.edge_fields;
    const ew = ef.length;
    const [ETYPE, ENAME, ETO] = ['type', 'name_or_index', 'to_node'].map((k) => ef.indexOf(k));
    const etypes = sB.meta.edge_types[0];
    const counts = new Map<string, number>();
    let e = 0;
    for (let from = 0; from < B.count; from++) {
      const edges = B.edgeCount(from);
      for (let k = 0; k < edges; k++, e += ew) {
        const to = sB.edges[e + ETO!]! / B.width;
        if (!isNew[to] || B.group(to) !== retainersOf) continue;
        const type = etypes[sB.edges[e + ETYPE!]!]!;
        if (type === 'weak') continue;
        const nameOrIndex = sB.edges[e + ENAME!]!;
        const label = type === 'element' || type === 'hidden' ? `[${type}]` : (sB.strings[nameOrIndex] ?? '?');
        const key = `${B.group(from)} .${/^\d+$/.test(label) ? '[i]' : label}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    retainers = Object.fromEntries([...counts.entries()].sort((x, y) => y[1] - x[1]).slice(0, top));
    console.log(`\nwho holds B's new ${retainersOf} (retainer group .field: count)`);
    for (const [k, v] of Object.entries(retainers)) console.log(`${String(v).padStart(9)}  ${k}`);
  }
  const paths = pathsOf ? rootPaths(sB, B, isNew, pathsOf, 5) : [];
  if (pathsOf) {
    console.log(`\nwhat keeps B's new ${pathsOf} alive (shortest path from the GC roots, ${paths.length} of them)`);
    for (const p of paths) console.log(`  ${p.join(' → ')}`);
  }
  console.log(
    JSON.stringify({
      bench: 'heap-diff',
      a: files[0],
      b: files[1],
      liveMiB: { a: Number(mb(total('bytesA'))), b: Number(mb(total('bytesB'))), newInB: Number(mb(total('newBytes'))) },
      top: sorted.map((r) => ({ group: r.group, growthMiB: Number(mb(r.bytesB - r.bytesA)), newCount: r.newCount })),
      ...(retainersOf ? { retainers } : {}),
      ...(pathsOf ? { paths } : {}),
    }),
  );
}

main();
