// The console's first module: it loads the rest (web/app.js and everything it imports, and
// in simulation mode the simulation's modules) and loads the page again when that fails.
// Browsers fail the loads in flight when the machine's network changes (Chromium:
// net::ERR_NETWORK_CHANGED — a VPN coming up, a Wi-Fi switch, a bridge or network namespace
// created on the host), and a module graph that failed once stays failed: without this the
// page would show "connecting…" for good. The waits grow as the live view's reconnects do,
// to 30 s between loads; the tries in a row are counted in the tab's sessionStorage and the
// count is cleared once the console runs.
const TRIES_KEY = 'cca-boot-tries';
const WAIT_MS = [500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000];

const tries = Number(sessionStorage.getItem(TRIES_KEY) ?? 0) || 0;
try {
  await (await import('./app.js')).started;
  sessionStorage.removeItem(TRIES_KEY);
} catch (e) {
  sessionStorage.setItem(TRIES_KEY, String(tries + 1));
  const until = Date.now() + WAIT_MS[Math.min(tries, WAIT_MS.length - 1)];
  const conn = document.getElementById('conn');
  conn.dataset.state = 'reloading';
  const reason = e instanceof Error ? e.message : String(e);
  conn.title = reason;
  const tick = () => {
    const s = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    conn.textContent = `the console did not load (${tries + 1} ${tries === 0 ? 'try' : 'tries'}: ${reason.slice(0, 160)}); loading it again in ${s}s`;
  };
  tick();
  setInterval(tick, 250);
  setTimeout(() => location.reload(), until - Date.now());
  // Reported as any uncaught error would be (the browser's console, a test's page errors).
  throw e;
}
