import type { ApplyPlan } from '../../core/model/diff.js';
import { paint } from './color.js';

const show = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? '(none)');

/**
 * An apply plan for people: `+ name` added, `~ name` changed with `- old` / `+ new` per
 * field, `- name` removed, then a count. Secrets arrive already redacted by the server.
 */
export function renderPlan(plan: ApplyPlan, color: boolean): string {
  const lines: string[] = [];
  for (const name of plan.added) lines.push(paint(color, 'green', `+ service ${name} (new)`));
  for (const c of plan.changed) {
    // Say up front which changes replace running replicas (a rolling update) and which do not.
    const rolls = c.rolls ?? [];
    lines.push(paint(color, 'yellow', `~ service ${c.name}${rolls.length > 0 ? ` (rolling update: ${rolls.join(', ')} changed)` : ' (no replica is replaced)'}`));
    for (const f of c.changes) {
      lines.push(`    ${f.path}:`);
      if ('old' in f) lines.push(paint(color, 'red', `      - ${show(f.old)}`));
      if ('new' in f) lines.push(paint(color, 'green', `      + ${show(f.new)}`));
    }
  }
  for (const name of plan.removed) lines.push(paint(color, 'red', `- service ${name} (removed)`));
  for (const name of plan.unchanged) lines.push(paint(color, 'dim', `  service ${name} (unchanged)`));
  lines.push(summary(plan));
  return lines.join('\n');
}

export function summary(plan: ApplyPlan): string {
  return `${plan.added.length} to add, ${plan.changed.length} to change, ${plan.removed.length} to remove, ${plan.unchanged.length} unchanged`;
}

export function hasChanges(plan: ApplyPlan): boolean {
  return plan.added.length + plan.changed.length + plan.removed.length > 0;
}
