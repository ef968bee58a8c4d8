import { MemoryStore } from '../../db/memory.js';
import { defineConformance } from './conformance.js';

defineConformance({ name: 'memory', open: async () => new MemoryStore() });
