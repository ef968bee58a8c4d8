/**
 * What every process and the browser share. Environment-free: no I/O, no clock, no
 * randomness (a test scans core/ for them).
 */
export * from './diagnostics/index.js';
export * from './model/index.js';
export * from './lang/index.js';
export * from './keys.js';
export * from './query.js';
