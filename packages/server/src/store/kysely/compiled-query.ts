import type { CompiledQuery, Kysely } from 'kysely';

/**
 * A query built and compiled once, then run with new parameter values. Building and compiling a
 * Kysely query costs more than SQLite takes to answer a primary-key lookup, so hot lookups
 * (authentication, payment status) use this. `build` is called with placeholder values; the values
 * passed to the returned function replace them, in the order the query binds them.
 */
export function compiledOnce<DB, Row>(
  build: (db: Kysely<DB>) => CompiledQuery<Row>,
): (db: Kysely<DB>, ...parameters: unknown[]) => Promise<Row[]> {
  let compiled: CompiledQuery<Row> | undefined;
  return async (db, ...parameters) => {
    compiled ??= build(db);
    const query: CompiledQuery<Row> = { ...compiled, parameters };
    return (await db.executeQuery(query)).rows;
  };
}
