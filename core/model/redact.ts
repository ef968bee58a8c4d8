import type { ServiceSpec } from './service.js';

export const REDACTED = '(redacted)';

/**
 * A copy of the spec safe to show anyone: every secret value replaced. Every API response,
 * CLI print-out, bundle and `toCca` default goes through this.
 */
export function redactSpec(spec: ServiceSpec): ServiceSpec {
  return { ...spec, secrets: spec.secrets.map((s) => ({ ...s, value: REDACTED })) };
}
