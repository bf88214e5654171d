import type { CompiledQuery, Kysely, QueryResult } from 'kysely';

/**
 * Compiled statements are cached per dialect adapter: a store's root handle and all its transactions
 * share one adapter, while a SQLite and a PostgreSQL store in one process (tests) each get their own
 * SQL. Module-level statements therefore survive the repositories made for each transaction.
 */
function perAdapter<Result>(compile: (db: Kysely<never>) => CompiledQuery<Result>) {
  const compiled = new WeakMap<object, CompiledQuery<Result>>();
  return (db: Kysely<never>): CompiledQuery<Result> => {
    const adapter = db.getExecutor().adapter;
    let query = compiled.get(adapter);
    if (query === undefined) {
      query = compile(db);
      compiled.set(adapter, query);
    }
    return query;
  };
}

/**
 * A query built and compiled once, then run with new parameter values. Building and compiling a
 * Kysely query costs more than SQLite takes to answer a primary-key lookup, so hot lookups
 * (authentication, payment status) use this. `build` is called with placeholder values; the values
 * passed to the returned function replace them, in the order the query binds them.
 */
export function compiledOnce<DB, Row>(
  build: (db: Kysely<DB>) => CompiledQuery<Row>,
): (db: Kysely<DB>, ...parameters: unknown[]) => Promise<Row[]> {
  const compiledFor = perAdapter((db) => build(db as unknown as Kysely<DB>));
  return async (db, ...parameters) => {
    const query: CompiledQuery<Row> = { ...compiledFor(db as unknown as Kysely<never>), parameters };
    return (await db.executeQuery(query)).rows;
  };
}

/**
 * An INSERT of one row with a fixed column list, compiled once: every payment, event and consumed proof
 * is written through one of these, and building the statement cost more than SQLite's insert itself.
 * `build` receives a placeholder row holding every column of `columns` (each null, which Kysely binds
 * like any value, so no column is left out); the row given to the returned function is bound in
 * `columns` order, a missing or undefined value as null. Parameters the statement binds after the row
 * (a constant in an ON CONFLICT clause, say) keep the values `build` gave them.
 */
export function compiledInsertOnce<DB, Row extends object, Result = unknown>(
  columns: readonly (keyof Row & string)[],
  build: (db: Kysely<DB>, placeholder: Row) => CompiledQuery<Result>,
): (db: Kysely<DB>, row: Row) => Promise<QueryResult<Result>> {
  const placeholder = Object.fromEntries(columns.map((column) => [column, null])) as Row;
  const compiledFor = perAdapter((db) => {
    const compiled = build(db as unknown as Kysely<DB>, placeholder);
    if (compiled.parameters.length < columns.length) {
      throw new Error(`the statement binds fewer values than its ${columns.length} columns`);
    }
    return compiled;
  });
  return (db, row) => {
    const compiled = compiledFor(db as unknown as Kysely<never>);
    const values = row as Record<string, unknown>;
    const parameters: unknown[] = columns.map((column) => values[column] ?? null);
    for (let i = columns.length; i < compiled.parameters.length; i++) parameters.push(compiled.parameters[i]);
    return db.executeQuery({ ...compiled, parameters });
  };
}
