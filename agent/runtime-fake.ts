/** The fake runtime is browser-safe and lives with the core (the simulation runs it too). */
export * from './core/fake-runtime.js';
