/** Who is at fault decides what the user should do and the CLI's exit code. */
export type Blame = 'user' | 'environment' | 'external' | 'bug';

export const exitCodeForBlame: Record<Blame, number> = {
  user: 1,
  environment: 2,
  external: 3,
  bug: 70,
};

/**
 * One registry entry. `cause` and `fix` are templates: `{name}` is replaced by the
 * diagnostic's parameter of that name, so the text stays in the registry and the
 * call site only supplies facts.
 */
export interface DiagnosticDef {
  code: string;
  blame: Blame;
  title: string;
  cause: string;
  fix: string;
  docs?: string;
}

/** A diagnostic as it travels: JSON-safe, the stable shape of `--output json` and API error bodies. */
export interface Diagnostic {
  code: string;
  blame: Blame;
  title: string;
  message: string;
  fix: string;
  params: Record<string, string | number | boolean>;
  /** Where in a user's file, when the failure is about one. */
  span?: { file: string; line: number; col: number; endLine?: number; endCol?: number };
  requestId?: string;
}
