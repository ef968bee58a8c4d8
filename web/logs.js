// A replica's last lines, followed: GET /v1/replicas/{id}/logs?follow=1&tail=N answers with
// newline-delimited JSON frames (core/model/logs.ts) relayed from the replica's node.
import { h, patch } from './dom.js';

/** Lines kept on the page: a long follow must not grow the page without end. */
const KEEP = 1000;
const TAIL = 200;

export class LogView {
  /** `headers()`: the live source's, with the token; undefined in the simulation (it runs no workloads). */
  constructor(el, headers) {
    this.el = el;
    this.headers = headers;
    this.ac = undefined;
    this.replica = undefined;
  }

  show(replica) {
    if (replica === this.replica && this.ac && !this.ac.signal.aborted) return;
    this.stop();
    this.replica = replica;
    if (!replica) return patch(this.el, h('p.empty', {}, 'Pick a replica (its "logs" link in the replicas view) to follow its output.'));
    if (!this.headers) return patch(this.el, h('p.empty', {}, 'The simulation runs no workloads, so there is no output to show.'));
    this.status = h('p.log-status', { 'data-state': 'connecting' }, 'connecting…');
    this.lines = h('pre#log-lines.log-lines');
    patch(this.el, h('h2', {}, `logs of ${replica}`));
    this.el.append(this.status, this.lines);
    this.ac = new AbortController();
    void this.follow(replica, this.ac.signal);
  }

  stop() {
    this.ac?.abort();
    this.ac = undefined;
    this.replica = undefined;
  }

  setStatus(state, text) {
    this.status.dataset.state = state;
    this.status.textContent = text;
  }

  append(stream, text) {
    for (const line of text.replace(/\n$/, '').split('\n')) this.lines.append(h(`span.log-line.${stream}`, {}, `${line}\n`));
    while (this.lines.childElementCount > KEEP) this.lines.firstElementChild.remove();
    // Stay at the bottom while following, unless the reader scrolled up.
    if (this.lines.scrollHeight - this.lines.scrollTop - this.lines.clientHeight < 80) this.lines.scrollTop = this.lines.scrollHeight;
  }

  async follow(replica, signal) {
    try {
      const r = await fetch(`/v1/replicas/${encodeURIComponent(replica)}/logs?follow=1&tail=${TAIL}`, { headers: this.headers({ accept: 'application/x-ndjson' }), cache: 'no-store', signal });
      if (!r.ok || !r.body) {
        const body = await r.json().catch(() => ({}));
        return this.setStatus('error', body.error ? `${body.error.code} ${body.error.message}` : `HTTP ${r.status}`);
      }
      this.setStatus('following', 'following');
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const frame = JSON.parse(buf.slice(0, i));
          buf = buf.slice(i + 1);
          if (frame.stream) this.append(frame.stream, frame.text);
          else if (frame.serving) this.setStatus('following', `following on node ${frame.serving.node}`);
          else if (frame.end) return this.setStatus('ended', `${frame.end.code} ${frame.end.message}`);
        }
      }
      this.setStatus('ended', 'the stream ended (open the view again to go on)');
    } catch (e) {
      if (!signal.aborted) this.setStatus('error', `the stream broke off: ${e?.message ?? e}`);
    }
  }
}
