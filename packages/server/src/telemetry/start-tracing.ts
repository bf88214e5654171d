import type { Tracing } from './tracing-sdk.ts';
import { tracesExporterOf } from './tracing-settings.ts';

/**
 * `gate402 serve`: starts tracing when the OTEL_* environment asks for it (tracing-settings.ts), and only
 * then loads OpenTelemetry, by a dynamic import. Undefined: tracing is off, and nothing was loaded.
 */
export async function startTracingFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<Tracing | undefined> {
  const exporter = tracesExporterOf(env);
  if (exporter === undefined) return undefined;
  const sdk = await import('./tracing-sdk.ts');
  return sdk.startTracing({ exporter: sdk.exporterNamed(exporter), env });
}
