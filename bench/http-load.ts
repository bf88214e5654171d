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
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const values: Record<string, string> = {};
  let buffer = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start`)), 60_000);
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

/**
 * Several servers loaded in turns — A, B, A, B, … for `rounds` rounds of `seconds` each — so that
 * whatever else the machine is doing at a moment weighs on all of them alike. Requests/s is the total
 * over all rounds; p99 is the median of the rounds' p99s.
 */
export async function loadInTurns(
  targets: readonly LoadTarget[],
  rounds: number,
  seconds: number,
): Promise<LoadResult[]> {
  const results = targets.map(() => [] as LoadResult[]);
  for (let round = 0; round < rounds; round++) {
    for (const [i, target] of targets.entries()) {
      results[i]?.push(await load(target.url, target.headers ?? {}, seconds));
    }
  }
  return results.map((runs) => ({
    requestsPerSecond: runs.reduce((sum, r) => sum + r.requestsPerSecond, 0) / runs.length,
    p99Ms: median(runs.map((r) => r.p99Ms)),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
  }));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
