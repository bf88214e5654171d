/**
 * One line of the benchmark table that `npm run bench` prints.
 * Every figure is measured in the same run as its reference, so the ratio is what to compare
 * across machines; the absolute figures only describe this run.
 */
export interface BenchRow {
  /** What was measured, e.g. "GET /account requests/s". */
  readonly name: string;
  /** The measured figure. */
  readonly value: number;
  /** Unit of `value`, e.g. "req/s", "ms", "tx/s", "MiB". */
  readonly unit: string;
  /** What the figure was compared against in the same run, e.g. "bare Fastify route". */
  readonly reference?: { readonly name: string; readonly value: number };
  /** value ÷ reference as measured, when it is not simply their quotient (a median of paired rounds). */
  readonly ratio?: number;
  /** The goal the issue set, in words, e.g. ">= 0.6 of bare" or ">= 3000 tx/s". */
  readonly target?: string;
  /** Whether the target was met in this run; absent when there is no target. */
  readonly met?: boolean;
}

/** A benchmark module: starts what it needs, measures, stops everything it started. */
export type Benchmark = () => Promise<BenchRow[]>;
