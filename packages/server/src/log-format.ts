import type { DestinationStream } from 'pino';
import type { LogFormat } from './config.ts';

/**
 * How log entries are written: LOG_FORMAT when set, else human-readable lines on a terminal and JSON
 * everywhere else (a pipe, a file, a container's log driver), where something reads them as data.
 */
export function chooseLogFormat(setting: LogFormat | undefined, stdoutIsTty: boolean): LogFormat {
  return setting ?? (stdoutIsTty ? 'pretty' : 'json');
}

/**
 * A pino destination that writes each entry as one readable line to `target`. It reads the JSON pino
 * made, so redaction has already happened: a secret that pino hides is hidden here too. Written in
 * process rather than with a transport worker: one line per entry needs no thread and no dependency.
 */
export function prettyLogStream(
  target: { write(text: string): unknown },
  options: { readonly colors: boolean },
): DestinationStream {
  return {
    write(chunk: string) {
      let text = '';
      for (const line of chunk.split('\n')) if (line !== '') text += prettyLogLine(line, options);
      target.write(text);
    },
  };
}

const LEVELS: Readonly<Record<number, { readonly name: string; readonly color: string }>> = {
  10: { name: 'TRACE', color: '90' },
  20: { name: 'DEBUG', color: '34' },
  30: { name: 'INFO ', color: '32' },
  40: { name: 'WARN ', color: '33' },
  50: { name: 'ERROR', color: '31' },
  60: { name: 'FATAL', color: '35' },
};

/** Said by the line's other parts, or the same on every line. */
const LEFT_OUT = new Set([
  'level',
  'time',
  'pid',
  'hostname',
  'msg',
  'v',
  'req',
  'res',
  'responseTime',
  'err',
]);

/**
 * One entry as `HH:MM:SS.mmm LEVEL message  key=value …` (local time), ending with a newline. A request
 * reads `incoming request GET /account from 127.0.0.1`, its end `request completed 200 in 3.1 ms`; an
 * error's stack follows on indented lines at level error and above. Not JSON: passed through as is.
 */
export function prettyLogLine(json: string, options: { readonly colors: boolean }): string {
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return `${json}\n`;
    entry = parsed as Record<string, unknown>;
  } catch {
    return `${json}\n`;
  }
  const paint = (color: string, text: string) => (options.colors ? `\x1b[${color}m${text}\x1b[0m` : text);
  const levelNumber = typeof entry.level === 'number' ? entry.level : 30;
  const level = LEVELS[levelNumber] ?? { name: String(entry.level).padEnd(5), color: '0' };
  const time = typeof entry.time === 'number' ? clock(new Date(entry.time)) : '--:--:--.---';

  const parts = [typeof entry.msg === 'string' ? entry.msg : ''];
  const req = record(entry.req);
  if (req !== undefined) {
    parts.push(`${String(req.method ?? '')} ${String(req.url ?? '')}`);
    if (req.remoteAddress !== undefined) parts.push(`from ${String(req.remoteAddress)}`);
  }
  const res = record(entry.res);
  if (res !== undefined) {
    parts.push(String(res.statusCode ?? ''));
    if (typeof entry.responseTime === 'number') parts.push(`in ${entry.responseTime.toFixed(1)} ms`);
  }
  const fields: string[] = [];
  const err = record(entry.err);
  if (err !== undefined) fields.push(`err=${value(err.message ?? err.type ?? err)}`);
  for (const [key, field] of Object.entries(entry)) {
    if (!LEFT_OUT.has(key)) fields.push(`${key}=${value(field)}`);
  }
  const message = parts.filter((p) => p !== '').join(' ');
  let line = `${paint('2', time)} ${paint(level.color, level.name)} ${message}`;
  if (fields.length > 0) line += `  ${paint('2', fields.join(' '))}`;
  if (err !== undefined && levelNumber >= 50 && typeof err.stack === 'string') {
    const stack = err.stack.split('\n').slice(1);
    if (stack.length > 0) line += `\n${paint('2', stack.map((l) => `    ${l.trim()}`).join('\n'))}`;
  }
  return `${line}\n`;
}

function clock(date: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  const ms = String(date.getMilliseconds()).padStart(3, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${ms}`;
}

function record(field: unknown): Record<string, unknown> | undefined {
  return typeof field === 'object' && field !== null && !Array.isArray(field)
    ? (field as Record<string, unknown>)
    : undefined;
}

const MAX_VALUE_LENGTH = 160;

/** A field's value, short: bare when it has no space or quote, long lists shortened to their count. */
function value(field: unknown): string {
  if (typeof field === 'string') return /^[^\s"=]+$/.test(field) ? field : JSON.stringify(field);
  if (Array.isArray(field) && field.length > 3) {
    return `[${field.slice(0, 2).map(value).join(', ')}, … ${field.length} in all]`;
  }
  const text = JSON.stringify(field) ?? String(field);
  return text.length > MAX_VALUE_LENGTH ? `${text.slice(0, MAX_VALUE_LENGTH)}…` : text;
}
