import { makeDiagnostic } from '../../core/diagnostics/error.js';
import { buildKey, prefixOf } from '../../core/keys.js';
import type { AuditFinding } from '../../core/model/facts.js';
import type { Compare } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { listFacts, putFact, unchanged, type Fact } from '../facts.js';
import { absentEvidence, causedByFact, decide, evidenceOf } from '../decisions/record.js';
import { addResources, noResources, resourcesText, type Resources } from '../placement/quantities.js';
import { indexBy } from './view.js';

export const AUDITOR = 'auditor';

const same = (a: Resources, b: Resources) => a.cpuMillis === b.cpuMillis && a.memoryBytes === b.memoryBytes;

/**
 * The auditor (rule 4): rebuilds each node's allocation from its assignments, both read at
 * one revision. A mismatch is an open finding (a `bug` diagnostic in its decision); the
 * scheduler places nothing on that node until an operator's repair request is carried out,
 * after which the rebuild matches and the finding is closed.
 */
export const auditor: Controller = {
  name: AUDITOR,
  watches: [prefixOf('allocation'), prefixOf('assigned')],
  async reconcile(ctx: StepContext): Promise<Wakeup> {
    const { store, now } = ctx;
    const rev = await store.revision();
    const [assigned, allocations, audits] = await Promise.all([
      listFacts(store, 'assigned', prefixOf('assigned'), rev),
      listFacts(store, 'allocation', prefixOf('allocation'), rev),
      listFacts(store, 'audit', prefixOf('audit')),
    ]);
    const allocByNode = indexBy(allocations, (a) => a.value.node);
    const auditByNode = indexBy(audits, (a) => a.value.node);
    const byNode = new Map<string, Fact<'assigned'>[]>();
    for (const a of assigned) byNode.set(a.value.node, [...(byNode.get(a.value.node) ?? []), a]);
    let failed = 0;
    for (const node of new Set([...byNode.keys(), ...allocByNode.keys(), ...auditByNode.keys()])) {
      const list = byNode.get(node) ?? [];
      const alloc = allocByNode.get(node);
      const audit = auditByNode.get(node);
      const expected = list.reduce((s, a) => addResources(s, a.value.resources), noResources);
      const recorded = alloc?.value.used ?? noResources;
      const ids = list.map((a) => a.value.replica).sort().join(',');
      const matches = same(expected, recorded) && ids === [...(alloc?.value.replicas ?? [])].sort().join(',');
      const open = audit?.value.open ?? false;
      if (matches === !open) continue; // no finding and none open, or an open one still true
      if (!matches && audit && same(audit.value.expected, expected) && same(audit.value.recorded, recorded)) continue;
      const finding: AuditFinding = { node, revision: rev, open: !matches, expected, recorded, at: now };
      const allocKey = buildKey('allocation', node);
      const diag = makeDiagnostic('CCA-E0402', { node, recorded: resourcesText(recorded), revision: rev, expected: resourcesText(expected) });
      const d = decide({
        kind: 'node',
        subject: node,
        controller: AUDITOR,
        action: matches ? 'audit finding closed' : 'audit finding',
        tag: matches ? 'audit-closed' : 'audit-finding',
        at: now,
        evidence: [alloc ? evidenceOf(alloc) : absentEvidence(allocKey), ...list.slice(0, 32).map(evidenceOf)],
        cause: causedByFact(alloc ?? { key: allocKey, modRevision: 0 }),
        reasons: matches ? [`the allocation matches its ${list.length} assignment(s) at revision ${rev}`] : [`${diag.code} ${diag.message}`],
      });
      // Compared at the current revision: if any of it changed since `rev`, audit again.
      const compares: Compare[] = [...d.compares, unchanged(alloc, allocKey), unchanged(audit, buildKey('audit', node)), ...list.map((a) => unchanged(a))];
      const res = await store.txn({ compare: compares.slice(0, 128), success: [putFact('audit', [node], finding), ...d.ops] });
      if (!res.succeeded) failed++;
    }
    return failed > 0 ? { at: now + 100 } : {};
  },
};
