import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

/** pino loggers answer isLevelEnabled; a logger without it is asked to write every call. */
type ParentLogger = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * The per-request logger, created only when a request actually logs at an enabled level.
 *
 * Fastify gives every request a pino child carrying its request id. Creating that child runs the
 * redaction of the root logger over the bindings, which costs more than the rest of a small
 * authenticated request (profiled: ~5% of GET /account's CPU) — and at the usual `info` level in
 * production, or `warn` under load, most requests never log anything. This wrapper has the same
 * methods; the first enabled call creates the real child, later calls reuse it, so output is
 * byte-for-byte what the child would have written, redaction included.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  private real: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: ParentLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions | undefined,
  ) {}

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.realLogger().level = level;
  }

  // Methods on the prototype, not arrow fields: one of these is made per request.
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return this.parent.isLevelEnabled?.(level) ?? true;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.realLogger().child(bindings, options);
  }

  private write(level: Level, args: unknown[]): void {
    if (this.real === undefined && !this.isLevelEnabled(level)) return;
    const log = this.realLogger()[level] as (...a: unknown[]) => void;
    log.apply(this.real, args);
  }

  private realLogger(): FastifyBaseLogger {
    this.real ??= this.parent.child(this.bindings, this.options);
    return this.real;
  }
}
