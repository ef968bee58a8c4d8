/** The runtime interface lives with the agent's core (agent/core/runtime.ts); the runtimes import it from here. */
export * from './core/runtime.js';
