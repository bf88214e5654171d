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
