/**
 * What a benchmark started and must stop however it ends: on SIGINT or SIGTERM every
 * registered stop runs (newest first) before the process exits, so no pod, Postgres or
 * load-generator process outlives an interrupted run.
 */
const stops = new Set<() => Promise<void>>();
let installed = false;

export function onInterrupt(stop: () => Promise<void>): () => void {
  if (!installed) {
    installed = true;
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        void (async () => {
          for (const s of [...stops].reverse()) await s().catch(() => undefined);
          process.exit(130);
        })();
      });
    }
  }
  stops.add(stop);
  return () => void stops.delete(stop);
}
