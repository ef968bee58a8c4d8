/** ANSI colour, or nothing: `paint(false, …)` is the identity, so goldens stay plain. */
const codes = { red: 31, green: 32, yellow: 33, cyan: 36, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof codes;

export function paint(on: boolean, colour: Colour, text: string): string {
  return on ? `\u001b[${codes[colour]}m${text}\u001b[0m` : text;
}
