/** The small part of better-sqlite3 12.x that db/sqlite uses (no @types package is installed). */
declare module 'better-sqlite3' {
  namespace Database {
    interface RunResult {
      changes: number;
      lastInsertRowid: number | bigint;
    }
    interface Statement<Row = unknown> {
      run(...params: unknown[]): RunResult;
      get(...params: unknown[]): Row | undefined;
      all(...params: unknown[]): Row[];
      iterate(...params: unknown[]): IterableIterator<Row>;
    }
    interface Transaction<F extends (...args: never[]) => unknown> {
      (...args: Parameters<F>): ReturnType<F>;
      deferred(...args: Parameters<F>): ReturnType<F>;
      immediate(...args: Parameters<F>): ReturnType<F>;
      exclusive(...args: Parameters<F>): ReturnType<F>;
    }
    interface Options {
      readonly?: boolean;
      fileMustExist?: boolean;
      timeout?: number;
    }
    interface Database {
      readonly open: boolean;
      readonly inTransaction: boolean;
      readonly name: string;
      readonly memory: boolean;
      prepare<Row = unknown>(sql: string): Statement<Row>;
      exec(sql: string): this;
      pragma(sql: string, opts?: { simple?: boolean }): unknown;
      transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F>;
      close(): this;
    }
  }
  interface DatabaseConstructor {
    new (filename?: string, options?: Database.Options): Database.Database;
  }
  const Database: DatabaseConstructor;
  export = Database;
}
