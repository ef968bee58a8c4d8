/**
 * The service spec as the store holds it: the shapes and defaults (service-shape.ts) with
 * the cross-field rules (cross-check.ts) run on the result. Kept apart from the shapes so
 * the rules can read the spec's types without the two modules importing each other.
 */
import { crossCheckService } from './cross-check.js';
import { normalizeService, serviceInputSchema, storedServiceInputSchema } from './service-shape.js';
import { SPEC_LIMITS, specBytes } from './spec-limits.js';

export * from './service-shape.js';

/**
 * The full service schema: shapes, defaults, and the cross-field rules (each a coded
 * issue carried in `params.cca`). Use validateService() to get diagnostics-ready issues.
 */
const specSchemaOf = (input: typeof serviceInputSchema, sized: boolean) =>
  input.transform(normalizeService).superRefine((spec, ctx) => {
    for (const issue of crossCheckService(spec)) {
      ctx.addIssue({ code: 'custom', message: issue.code, path: issue.path, params: { cca: issue.code, ...issue.params } });
    }
    // Only what is applied now: a stored spec stays readable whatever its size (see Rules).
    const bytes = sized ? specBytes(spec) : 0;
    if (bytes > SPEC_LIMITS.serviceBytes) {
      ctx.addIssue({ code: 'custom', message: 'CCA-E0331', path: [], params: { cca: 'CCA-E0331', service: spec.name, bytes, limit: SPEC_LIMITS.serviceBytes } });
    }
  });
export const serviceSpecSchema = specSchemaOf(serviceInputSchema, true);

/**
 * The same spec under the rules an older server wrote it with (see Rules): how `/services/`
 * and the specs inside `/assigned/` are read, never how a new spec is accepted.
 */
export const storedServiceSpecSchema = specSchemaOf(storedServiceInputSchema, false);
