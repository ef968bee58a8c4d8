export * from './types.js';
export * from './registry.js';
export * from './error.js';
