// Small SVG charts drawn by hand (no library): a sparkline of one or more series over a
// time window, with horizontal reference lines (a target, bounds). Pure DOM, no state.

const NS = 'http://www.w3.org/2000/svg';

export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

/**
 * A chart of `series` ([{ cls, points: [{ t, v }], step? }]) over [t0, t1] and [0, vmax],
 * `width` × `height` pixels, with `lines` ([{ v, cls, label }]) drawn across it. A step
 * series holds each value until the next point (counts, intents); others are joined.
 * `data-points` counts the points drawn (the tests read it).
 */
export function chart({ series, lines = [], t0, t1, vmax, width = 220, height = 44, title = '' }) {
  const top = Math.max(vmax, ...lines.map((l) => l.v), 1e-9) * 1.1;
  const span = Math.max(1, t1 - t0);
  // 3px inside the frame, so a zero or a full line is not hidden by the border.
  const x = (t) => ((Math.min(t1, Math.max(t0, t)) - t0) / span) * (width - 6) + 3;
  const y = (v) => height - 3 - (Math.max(0, v) / top) * (height - 6);
  const paths = series.map((ser) => {
    const pts = ser.points.filter((p) => p.t <= t1);
    if (pts.length === 0) return undefined;
    let d = '';
    pts.forEach((p, i) => {
      const px = x(p.t).toFixed(1);
      const py = y(p.v).toFixed(1);
      if (i === 0) d += `M${px},${py}`;
      else if (ser.step) d += `H${px}V${py}`;
      else d += `L${px},${py}`;
    });
    if (ser.step) d += `H${x(t1).toFixed(1)}`; // a count holds until now
    return s('path', { d, class: `series ${ser.cls ?? ''}`, fill: 'none' }, s('title', {}, ser.label ?? ''));
  });
  const refs = lines.map((l) => s('line', { x1: 0, x2: width, y1: y(l.v).toFixed(1), y2: y(l.v).toFixed(1), class: `ref ${l.cls ?? ''}` }, s('title', {}, l.label ?? String(l.v))));
  const n = series.reduce((a, ser) => a + ser.points.length, 0);
  return s('svg', { class: 'chart', width, height, viewBox: `0 0 ${width} ${height}`, 'data-points': n, role: 'img', 'aria-label': title },
    s('title', {}, title), s('rect', { x: 0, y: 0, width, height, class: 'frame' }), ...refs, ...paths);
}

/** The highest value of the series' points (for a shared scale). */
export function peak(series) {
  let m = 0;
  for (const ser of series) for (const p of ser.points) if (p.v > m) m = p.v;
  return m;
}
