/** Bare words the lexer reads back as one identifier. */
export const identPattern = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * The canonical spelling of a string value. Multi-line text that can be written raw uses
 * """triple quotes""" (readable config files); everything else is one line with escapes.
 * Depends only on the value, which is what makes `format` idempotent.
 */
export function quote(s: string): string {
  if (s.includes('\n') && !s.includes('"""') && !s.endsWith('"') && !/[\0-\x08\x0b-\x1f\x7f]/.test(s)) {
    return `"""\n${s}"""`;
  }
  let out = '"';
  for (const ch of s) {
    switch (ch) {
      case '"':
        out += '\\"';
        break;
      case '\\':
        out += '\\\\';
        break;
      case '\n':
        out += '\\n';
        break;
      case '\t':
        out += '\\t';
        break;
      case '\r':
        out += '\\r';
        break;
      default: {
        const cp = ch.codePointAt(0)!;
        out += cp < 0x20 || cp === 0x7f ? `\\u{${cp.toString(16)}}` : ch;
      }
    }
  }
  return `${out}"`;
}

/** A label or map key: bare when it reads back as one word, quoted otherwise. */
export function labelText(value: string, quoted: boolean): string {
  return quoted || !identPattern.test(value) ? quote(value) : value;
}
