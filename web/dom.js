// Small DOM helpers. Updates are keyed and in place, so a live update never resets
// scroll, focus, text selection or the selected row.

/** h('td.num', { title }, 'text', child…) */
export function h(tag, attrs = {}, ...children) {
  const [head, ...classes] = tag.split('.');
  const [name, id] = head.split('#');
  const el = document.createElement(name);
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style') el.style.cssText = v; // CSSOM, which the page's CSP allows (style attributes it does not)
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

/** Set an element's children only when their rendering differs (keeps selection inside unchanged cells). */
export function patch(el, ...children) {
  const next = h('div', {}, ...children);
  if (el.innerHTML !== next.innerHTML) el.replaceChildren(...next.childNodes);
}

/**
 * A table whose rows are keyed: existing rows are updated cell by cell, new ones inserted
 * in order, gone ones removed. `columns` = [{ title, cell(row) → node|string, cls? }].
 */
export function keyedTable(container, { id, columns, rows, key, empty, rowClass }) {
  let table = container.querySelector(`table[data-id="${id}"]`);
  if (!table) {
    table = h('table', { 'data-id': id },
      h('thead', {}, h('tr', {}, columns.map((c) => h(`th${c.cls ? `.${c.cls}` : ''}`, {}, c.title)))),
      h('tbody'));
    container.append(table);
  }
  const body = table.tBodies[0];
  const existing = new Map([...body.rows].map((tr) => [tr.dataset.key, tr]));
  let at = 0;
  for (const row of rows) {
    const k = key(row);
    let tr = existing.get(k);
    if (tr) existing.delete(k);
    else {
      tr = h('tr', { dataset: { key: k } }, columns.map((c) => h(`td${c.cls ? `.${c.cls}` : ''}`)));
    }
    const cls = rowClass?.(row) ?? '';
    // The page's own marks (a clicked row, the keyboard's cursor) survive the row's class changing.
    const marks = ['selected', 'cursor'].filter((m) => tr.classList.contains(m));
    if (tr.className.replace(/\b(selected|cursor)\b/g, '').trim().replace(/\s+/g, ' ') !== cls) tr.className = [cls, ...marks].join(' ').trim();
    columns.forEach((c, i) => patch(tr.cells[i], c.cell(row)));
    if (body.rows[at] !== tr) body.insertBefore(tr, body.rows[at] ?? null);
    at++;
  }
  for (const tr of existing.values()) tr.remove();
  let note = container.querySelector(`p.empty[data-for="${id}"]`);
  if (rows.length === 0 && empty) {
    if (!note) container.append((note = h('p.empty', { 'data-for': id })));
    note.textContent = empty;
  } else note?.remove();
  return table;
}

export function ago(ms) {
  if (!Number.isFinite(ms)) return '—';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function clock(ms) {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

export function bytes(n) {
  const units = ['B', 'Ki', 'Mi', 'Gi', 'Ti'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${Number.isInteger(n) ? n : n.toFixed(1)}${units[i]}`;
}
