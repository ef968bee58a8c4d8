import type { ConstraintOp } from '../model/constraints.js';
import type { Span } from './source.js';
import type { Comment, Segment } from './tokens.js';

/** A value. `error` stands in where a syntax error was already reported, so lowering stays quiet. */
export type Expr =
  | { kind: 'string'; value: string; span: Span }
  | { kind: 'number'; text: string; negative: boolean; segments: Segment[]; span: Span }
  | { kind: 'symbol'; name: string; span: Span }
  | { kind: 'list'; items: Expr[]; notes: Notes[]; closing: Comment[]; span: Span }
  | { kind: 'map'; entries: MapEntry[]; closing: Comment[]; span: Span }
  | { kind: 'error'; span: Span };

/** Comments kept with one list item or map entry: on the lines before it, and after it on its line. */
export interface Notes {
  leading: Comment[];
  trailing?: Comment;
}

export interface MapEntry extends Notes {
  key: Label;
  value: Expr;
}

/** A block label or map key: a bare word or a quoted string. */
export interface Label {
  value: string;
  quoted: boolean;
  span: Span;
}

/** `zone`, `node`, `label.disk` or `label."app.io/tier"`. */
export interface Selector {
  base: Label;
  key?: Label;
  span: Span;
}

interface ItemBase {
  span: Span;
  /** Comments on their own lines before the item (and any that sat inside it, hoisted). */
  leading: Comment[];
  /** A comment on the same line after the item. */
  trailing?: Comment;
  /** A blank line separated this item from what came before it. */
  blankBefore: boolean;
}

export type Item =
  | (ItemBase & { kind: 'attr'; name: Label; value: Expr })
  | (ItemBase & { kind: 'block'; type: Label; labels: Label[]; items: Item[]; closing: Comment[] })
  | (ItemBase & { kind: 'rule'; keyword: 'require' | 'restrict' | 'prefer'; selector: Selector; op: ConstraintOp; opSpan: Span; value: Expr; weight?: Expr })
  | (ItemBase & { kind: 'accept'; value: Expr })
  | (ItemBase & { kind: 'allow'; service: Label; port?: Expr });

export type Block = Extract<Item, { kind: 'block' }>;

export interface SourceFile {
  items: Item[];
  /** Comments after the last item. */
  closing: Comment[];
}

export const STATEMENT_KEYWORDS = ['require', 'restrict', 'prefer', 'accept', 'allow'] as const;
