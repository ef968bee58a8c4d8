import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { renderAll } from '../../core/diagnostics/index.js';
import { FIELD_NAMES, parse } from '../../core/lang/index.js';
import { DEFAULTS, formatBytes, formatCpu, formatDuration } from '../../core/model/index.js';
import { repoRoot } from './support/golden.js';

const doc = readFileSync(resolve(repoRoot, 'docs/language.md'), 'utf8');
const blocks = [...doc.matchAll(/```cca\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe('docs/language.md', () => {
  test('has examples', () => expect(blocks.length).toBeGreaterThan(15));

  blocks.forEach((block, i) => {
    test(`example ${i + 1} parses cleanly`, () => {
      // Fragments are checked inside a service that declares the ports they refer to.
      const whole = /^\s*(#[^\n]*\n\s*)*service /.test(block);
      const ports = /\bport \w+ \{/.test(block) ? '' : 'port http { container = 8080 }\nport pg { container = 5432 }\n';
      const text = whole ? block : `service doc {\n${/^image\s*=/m.test(block) ? '' : 'image = "busybox:1.35"\n'}${ports}${block}\n}\n`;
      const r = parse(text, `example-${i + 1}.cca`, { existing: 'unchecked' });
      expect(renderAll(r.diagnostics, 'plain', { sources: new Map([[`example-${i + 1}.cca`, text]]) })).toBe('');
    });
  });

  test('mentions every field, block and rule', () => {
    const missing = Object.values(FIELD_NAMES)
      .flat()
      .filter((f) => !doc.includes(`\`${f}\``));
    expect(missing).toEqual([]);
  });

  test('its defaults table matches core/model/defaults.ts', () => {
    const rows = [
      ['`replicas`', `\`${DEFAULTS.replicas}\``],
      ['`cpu`', `\`${formatCpu(DEFAULTS.cpuMillis)}\``],
      ['`memory`', `\`${formatBytes(DEFAULTS.memoryBytes)}\``],
      ['`port … protocol`', `\`${DEFAULTS.portProtocol}\``],
      ['`health … every`', `\`${formatDuration(DEFAULTS.healthIntervalMs)}\``],
      ['`health … timeout`', `\`${formatDuration(DEFAULTS.healthTimeoutMs)}\``],
      ['`health … failures`', `\`${DEFAULTS.healthFailureThreshold}\``],
      ['`health … delay`', `\`${formatDuration(DEFAULTS.healthInitialDelayMs)}\``],
      ['`prefer … weight`', `\`${DEFAULTS.preferWeight}\``],
      ['`update … max_surge`', `\`${DEFAULTS.maxSurge}\``],
      ['`update … max_unavailable`', `\`${DEFAULTS.maxUnavailable}\``],
      ['`update … progress_deadline`', `\`${formatDuration(DEFAULTS.progressDeadlineMs)}\``],
      ['`autoscale … min`', `\`${DEFAULTS.autoscaleMin}\``],
      ['`autoscale … target_cpu`', `\`${DEFAULTS.autoscaleTargetCpuPercent}%\``],
      ['`init … timeout`', `\`${formatDuration(DEFAULTS.initTimeoutMs)}\``],
      ['`config … mode`', `\`"0${DEFAULTS.configMode.toString(8)}"\``],
      ['`secret … mode`', `\`"0${DEFAULTS.secretMode.toString(8)}"\``],
      ['`stop_grace`', `\`${formatDuration(DEFAULTS.stopGraceMs)}\``],
      ['`restart`', `\`${DEFAULTS.restart}\``],
      ['`spread`', `\`[${DEFAULTS.spread.join(', ')}]\``],
    ];
    for (const [k, v] of rows) expect(doc).toContain(`| ${k} | ${v} |`);
  });
});
