export * from './types.js';
export * from './registry.js';
export * from './error.js';
export * from './render.js';
export * from './explain.js';
export * from './coerce.js';
export * from './snippet.js';
export * from './docs-page.js';
