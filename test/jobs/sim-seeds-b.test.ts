import { seedWindow } from './sim-seeds.js';

seedWindow(101);
