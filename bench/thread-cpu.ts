import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc reports CPU times in these ticks (100 per second on every mainstream build). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system, in ms) that the main thread of process `pid` has used so far — the event
 * loop's thread, which a Node server's requests all share — or undefined where /proc is not available.
 * Read from /proc/<pid>/task/<pid>/stat, so libuv's thread pool (log flushes) and worker threads
 * (checkpoints) are not counted. Resolution 10 ms: measure over a pass that uses a second or more.
 *
 * Why: at a fixed request rate, the CPU a request costs the event loop decides how much headroom is
 * left for bursts, and it is far steadier between runs on a shared VM than a 2 s pass's p99.
 */
export function mainThreadCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 (utime) and 15 (stime) of proc(5); fields[0] is field 3.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : undefined;
}
