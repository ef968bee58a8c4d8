import { DEFAULTS } from '../model/defaults.js';
import { closest } from '../model/suggest.js';
import type { Expr, Item } from './ast.js';
import { SELECTOR_BASES } from './fields.js';
import type { Path } from './fields.js';
import type { Span } from './source.js';
import * as v from './values.js';
import type { Reporter } from './values.js';

/** What rule lowering needs from its service: reporting, and recording spans of spec paths. */
export interface RuleContext extends Reporter {
  span(path: Path, span: Span): void;
}

/** `require`/`restrict`/`prefer`, `accept` and `allow` rules → placement and network entries. */
function constraintValues(e: Expr, op: string, ctx: RuleContext): string[] | undefined {
  const one = (x: Expr): string | undefined => {
    if (x.kind === 'string') return x.value;
    if (x.kind === 'symbol') return x.name;
    if (x.kind === 'number') return x.text;
    if (x.kind !== 'error') ctx.report('CCA-E0217', { reason: `a constraint compares with text, not ${v.describeExpr(x)}` }, x.span);
    return undefined;
  };
  if (op === 'in' || op === 'not in') {
    if (e.kind !== 'list' || e.items.length === 0) {
      if (e.kind !== 'error') ctx.report('CCA-E0217', { reason: `\`${op}\` needs a non-empty [list] of values` }, e.span);
      return undefined;
    }
    const vals = e.items.map(one);
    return vals.every((x) => x !== undefined) ? (vals as string[]) : undefined;
  }
  if (e.kind === 'list') {
    ctx.report('CCA-E0217', { reason: `\`${op}\` compares with one value; use \`in\` for a list` }, e.span);
    return undefined;
  }
  const x = one(e);
  return x === undefined ? undefined : [x];
}

export function lowerStatement(it: Item, out: Record<string, unknown>, ctx: RuleContext): void {
  const placement = (out.placement ??= {}) as Record<string, unknown[]>;
  if (it.kind === 'rule') {
    const base = it.selector.base.value;
    if (!SELECTOR_BASES.includes(base)) {
      const near = closest(base, SELECTOR_BASES);
      ctx.report('CCA-E0217', { reason: `\`${base}\` is not an attribute${near ? `; did you mean \`${near}\`?` : ''}` }, it.selector.span);
      return;
    }
    if ((base === 'label') !== (it.selector.key !== undefined)) {
      ctx.report('CCA-E0217', { reason: base === 'label' ? 'write label.KEY, e.g. label.disk' : `\`${base}\` takes no key` }, it.selector.span);
      return;
    }
    const values = constraintValues(it.value, it.op, ctx);
    if (!values) return;
    const constraint = { attribute: it.selector.key ? `label.${it.selector.key.value}` : base, op: it.op, values };
    const list = (placement[it.keyword] ??= []);
    const path = ['placement', it.keyword, list.length];
    ctx.span(path, it.span);
    if (it.keyword === 'prefer') {
      const weight = it.weight === undefined ? DEFAULTS.preferWeight : v.int(it.weight, 'weight', ctx);
      if (weight === undefined) return;
      if (it.weight) ctx.span([...path, 'weight'], it.weight.span);
      list.push({ constraint, weight });
    } else list.push(constraint);
  } else if (it.kind === 'accept') {
    const taint = v.word('accept "gpu"')(it.value, 'accept', ctx);
    if (taint === undefined) return;
    const list = (placement.accept ??= []);
    ctx.span(['placement', 'accept', list.length], it.value.span);
    list.push(taint);
  } else if (it.kind === 'allow') {
    const network = (out.network ??= { allow: [] }) as { allow: unknown[] };
    const rule: Record<string, unknown> = { service: it.service.value };
    const path = ['network', 'allow', network.allow.length];
    ctx.span(path, it.span);
    ctx.span([...path, 'service'], it.service.span);
    if (it.port) {
      const port = v.portRef(it.port, 'port', ctx);
      if (port === undefined) return;
      rule.port = port;
      ctx.span([...path, 'port'], it.port.span);
    }
    network.allow.push(rule);
  }
}

