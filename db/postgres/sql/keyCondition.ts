import type { KeyInterval } from '../../keyspace.js';

/**
 * A WHERE fragment selecting `column` within the interval, with its parameters
 * numbered from `firstParam`. Unnamed statements are planned with their actual
 * parameters, so each shape keeps a plain index range condition.
 */
export function keyCondition(column: string, iv: KeyInterval, firstParam: number): { sql: string; params: string[] } {
  if (iv.single) return { sql: `${column} = $${firstParam}`, params: [iv.start] };
  if (iv.end !== undefined) {
    return { sql: `${column} >= $${firstParam} AND ${column} < $${firstParam + 1}`, params: [iv.start, iv.end] };
  }
  if (iv.start === '') return { sql: 'TRUE', params: [] };
  return { sql: `${column} >= $${firstParam}`, params: [iv.start] };
}
