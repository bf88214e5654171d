import { type ChildProcess, spawn } from 'node:child_process';
import autocannon from 'autocannon';

export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p99Ms: number;
  readonly non2xx: number;
}

/** Starts a TypeScript server script in its own process and reads the `NAME value` lines it prints. */
export async function startServerProcess(
  script: string,
  expect: string[],
): Promise<{ child: ChildProcess; values: Record<string, string> }> {
  const child = spawn(process.execPath, ['--conditions=@gate402/source', '--import', 'tsx', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const values: Record<string, string> = {};
  let buffer = '';
  await new Promise<void>((resolve, reject) => {
    // Generous: a gateway with its chains and migrations takes over a minute to start on this 2-core
    // machine while other engineers' test suites run.
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`${script} did not start`));
    }, 240_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (const line of buffer.split('\n')) {
        const [name, value] = line.split(' ');
        if (name && value) values[name] = value;
      }
      if (expect.every((name) => values[name] !== undefined)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, values };
}

/** autocannon against one URL for a fixed time; bounded, loopback only. */
export async function load(
  url: string,
  headers: Record<string, string>,
  seconds: number,
): Promise<LoadResult> {
  const result = await autocannon({ url, headers, connections: 50, pipelining: 1, duration: seconds });
  return {
    requestsPerSecond: result.requests.average,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

export interface LoadTarget {
  readonly url: string;
  readonly headers?: Record<string, string>;
}

/** A measured target against its reference in the same run. */
export interface Comparison {
  readonly reference: LoadResult;
  readonly measured: LoadResult;
  /** Median over the rounds of measured req/s ÷ reference req/s in that round. */
  readonly ratio: number;
}

/**
 * A target and its reference loaded in paired rounds: each round loads both, one straight after the
 * other, the reference first in even rounds and second in odd ones. On a shared VM the machine's speed
 * drifts by a third within a minute, so a ratio of two separate runs measures the drift as much as the
 * servers; within a pair both meet nearly the same machine. The ratio is the median of the rounds'
 * ratios, which one slow moment cannot move; req/s are the means over the rounds, p99 their medians.
 * `measured` may be given per round (e.g. each round with its own key, so no rate limit is reached).
 */
export async function compareInRounds(
  reference: LoadTarget,
  measured: LoadTarget | ((round: number) => LoadTarget),
  rounds: number,
  seconds: number,
): Promise<Comparison> {
  const references: LoadResult[] = [];
  const measures: LoadResult[] = [];
  const run = (target: LoadTarget) => load(target.url, target.headers ?? {}, seconds);
  const measuredIn = (round: number) => (typeof measured === 'function' ? measured(round) : measured);
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      references.push(await run(reference));
      measures.push(await run(measuredIn(round)));
    } else {
      measures.push(await run(measuredIn(round)));
      references.push(await run(reference));
    }
  }
  return {
    reference: summary(references),
    measured: summary(measures),
    ratio: median(
      measures.map((m, i) => m.requestsPerSecond / (references[i]?.requestsPerSecond ?? Number.NaN)),
    ),
  };
}

function summary(runs: readonly LoadResult[]): LoadResult {
  return {
    requestsPerSecond: runs.reduce((sum, r) => sum + r.requestsPerSecond, 0) / runs.length,
    p99Ms: median(runs.map((r) => r.p99Ms)),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
  };
}

/** The middle value; of an even count, the mean of the two middle ones. */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[middle] ?? 0;
  return ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}
