/**
 * `npm run bench:console`: the console's cluster map at scale, in headless Chromium (Debian's,
 * as the browser tests use). web/scale.js builds BENCH_NODES nodes and BENCH_REPLICAS replicas
 * of facts in a MemoryStore in the page, then BENCH_ROUNDS rounds of real-shaped changes (an
 * agent's report, a node lost and its replicas replaced and placed, a scale-up), each one
 * store transaction = one watch batch, which the map follows as it follows live mode. Prints
 * the per-batch update time (DOM update and layout included) and, last, one JSON line.
 */
import os from 'node:os';
import { launchBrowser, measureMapScript, startTestPod, type MapFigures } from '../test/web/support.js';

const NODES = Number(process.env.BENCH_NODES ?? 1_000);
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);


async function main(): Promise<void> {
  const pod = await startTestPod({ openReads: true });
  const browser = await launchBrowser();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${pod.url}/#map`);
    await page.waitForSelector('#view-map');
    const r = (await page.evaluate(measureMapScript({ nodes: NODES, replicas: REPLICAS, rounds: ROUNDS, seed: 1 }))) as MapFigures;
    const load = Number(os.loadavg()[0]!.toFixed(1));
    const ms = (n: number) => `${n.toFixed(2)} ms`;
    console.log(`cluster map in Chromium: ${r.nodes} nodes, ${r.replicas} replicas (${r.boxes} boxes, ${r.chips} chips); load ${load}`);
    console.log('metric                                   value');
    for (const [k, v] of [
      ['watch batches measured', String(r.batches)],
      ['events per batch (mean)', r.eventsPerBatch.toFixed(1)],
      ['update per batch, median', ms(r.medianMs)],
      ['update per batch, p95', ms(r.p95Ms)],
      ['update per batch, max', ms(r.maxMs)],
      ['  of which script (model + DOM), median', ms(r.scriptMedianMs)],
      ['  of which script, p95', ms(r.scriptP95Ms)],
      ['first draw (whole cluster)', ms(r.firstDrawMs)],
      ['building the facts (not the map)', ms(r.buildMs)],
    ] as const) console.log(`${k.padEnd(40)} ${v}`);
    console.log(JSON.stringify({ bench: 'console', load, ...Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v.toFixed(2))])) }));
  } finally {
    await browser.close();
    await pod.close();
  }
}

await main();
