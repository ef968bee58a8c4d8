import { describe, expect, it } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { logSettings } from '../../core/log-settings.js';

describe('--log-level / --log-format', () => {
  it('default to info, pretty on a terminal and JSON otherwise', () => {
    expect(logSettings({}, true)).toEqual({ level: 'info', format: 'pretty' });
    expect(logSettings({}, false)).toEqual({ level: 'info', format: 'json' });
    expect(logSettings({ level: 'trace', format: 'json' }, true)).toEqual({ level: 'trace', format: 'json' });
  });

  it('anything else is CCA-E0730 naming the setting and the choices', () => {
    for (const given of [{ level: 'loud' }, { format: 'xml' }]) {
      let err: unknown;
      try {
        logSettings(given, false);
      } catch (e) {
        err = e;
      }
      expect(isCcaError(err) && err.code).toBe('CCA-E0730');
      expect(isCcaError(err) && err.diagnostic.message).toContain(given.level ? '--log-level "loud"' : '--log-format "xml"');
    }
  });
});
