/**
 * A streaming Server-Sent Events scanner for the load generator: it reads each frame's `id`
 * and `event` fields and skips `data` lines without copying them, chunk by chunk, so its cost
 * per frame does not grow with what came before (no whole-buffer concatenation, no JSON).
 */
export class SseScanner {
  private atLineStart = true;
  /** The pieces of the current line when it is a field we keep (id, event); undefined: skipping. */
  private line: Buffer[] | undefined;
  private id: string | undefined;
  private event: string | undefined;
  private fields = 0;

  constructor(private readonly onFrame: (frame: { id: string | undefined; event: string | undefined }) => void) {}

  push(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      if (this.atLineStart) {
        const b = chunk[pos]!;
        if (b === 0x0a) {
          this.dispatch();
          pos++;
          continue;
        }
        // 'i'd and 'e'vent are kept; data, retry and comments are skipped.
        this.line = b === 0x69 || b === 0x65 ? [] : undefined;
        this.atLineStart = false;
        // A comment (a heartbeat) alone makes no frame.
        if (b !== 0x3a) this.fields++;
      }
      const nl = chunk.indexOf(0x0a, pos);
      const end = nl < 0 ? chunk.length : nl;
      this.line?.push(chunk.subarray(pos, end));
      if (nl < 0) return;
      if (this.line) this.field(Buffer.concat(this.line).toString('latin1').replace(/\r$/, ''));
      this.line = undefined;
      this.atLineStart = true;
      pos = nl + 1;
    }
  }

  private field(line: string): void {
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'id') this.id = value;
    else if (name === 'event') this.event = value;
  }

  private dispatch(): void {
    if (this.fields > 0) this.onFrame({ id: this.id, event: this.event });
    this.id = undefined;
    this.event = undefined;
    this.fields = 0;
  }
}
