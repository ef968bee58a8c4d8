// Loaded into a benchmarked process with NODE_OPTIONS="--import /abs/bench/cpu-profile.mjs"
// (Node refuses --cpu-prof there): samples the process's CPU from start and writes a V8
// profile into CCA_CPU_PROFILE_DIR when the process exits. Open it in Chrome's DevTools.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.CCA_CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  process.on('exit', () => {
    // The callback API answers on this thread, synchronously: safe inside 'exit'.
    session.post('Profiler.stop', (err, r) => {
      if (!err) writeFileSync(join(dir, `pod-${process.pid}.cpuprofile`), JSON.stringify(r.profile));
    });
  });
}
