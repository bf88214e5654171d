import { type RawBuilder, sql } from 'kysely';

/**
 * Exact sums of amounts stored as decimal text (atomic units, up to uint256) in SQL that both SQLite and
 * PostgreSQL run. Neither can add them as they are: SQLite's integers stop at 2^63 (an 18-decimal token
 * passes that at 9.2 tokens), and a float loses units. So each amount is cut into 9-digit pieces from
 * the right, each piece summed as an integer, and the pieces put together again with bigint in
 * JavaScript. A piece's sum stays exact as a JavaScript number up to 9,000,000 rows per group (under
 * 2^53), far beyond what one group of one account holds; `joinPieces` refuses anything larger.
 */

/** Digits per piece. */
const PIECE_DIGITS = 9;
/** Pieces per amount at most: 9 × 9 = 81 digits hold any uint256 (78 digits). */
const PIECES = 9;

/**
 * The pieces that amounts of up to `digits` digits need: 2 for anything below 10^18 (every amount of
 * a 6- or 9-decimal asset, and most of an 18-decimal one), up to 9. Each piece costs a CASE per row, so
 * a query sums as few as the amounts it reads need: ask with `FEW_PIECES`, select `longestOf(column)`
 * beside them, and ask again with `piecesFor(longest)` when an amount was longer.
 */
export function piecesFor(digits: number): number {
  return Math.min(PIECES, Math.max(1, Math.ceil(digits / PIECE_DIGITS)));
}
export const FEW_PIECES = 2;

/** `max(length(column))`, named `longest`: whether the pieces summed were enough (see piecesFor). */
export function longestOf(column: string): RawBuilder<unknown> {
  return sql`max(length(${sql.ref(column)})) as longest`;
}

/** The select expressions `piece0` … (lowest first) of `sum(column)`, each named; `count` of them. */
export function sumPieces(column: string, count = PIECES): RawBuilder<unknown>[] {
  const value = sql.ref(column);
  const pieces: RawBuilder<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const low = PIECE_DIGITS * i; // digits to the right of this piece
    const high = low + PIECE_DIGITS;
    // The piece is the digits at positions (len - high, len - low] (1-based: len-high+1 … len-low),
    // cut to the string's start; nothing when the string is no longer than `low`.
    pieces.push(sql`sum(case
      when length(${value}) <= ${sql.lit(low)} then 0
      when length(${value}) <= ${sql.lit(high)} then cast(substr(${value}, 1, length(${value}) - ${sql.lit(low)}) as bigint)
      else cast(substr(${value}, length(${value}) - ${sql.lit(high - 1)}, ${sql.lit(PIECE_DIGITS)}) as bigint)
    end) as ${sql.ref(`piece${i}`)}`);
  }
  return pieces;
}

/** Whether a row summed with `count` pieces held an amount longer than they cover. */
export function needsMorePieces(row: Readonly<Record<string, unknown>>, count: number): boolean {
  return Number(row.longest ?? 0) > count * PIECE_DIGITS;
}

/** The exact total from a row's piece sums (numbers from SQLite, numeric text from PostgreSQL). */
export function joinPieces(row: Readonly<Record<string, unknown>>): bigint {
  let total = 0n;
  for (let i = PIECES - 1; i >= 0; i--) {
    const piece = row[`piece${i}`];
    const value = piece === null || piece === undefined ? 0n : BigInt(piece as number | string | bigint);
    if (typeof piece === 'number' && !Number.isSafeInteger(piece)) {
      throw new Error('a piece sum passed 2^53: too many rows in one group for an exact sum');
    }
    total = total * 10n ** BigInt(PIECE_DIGITS) + value;
  }
  return total;
}
