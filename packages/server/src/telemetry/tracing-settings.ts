/**
 * Whether the OTEL_* environment asks for traces. Off unless OTEL_TRACES_EXPORTER names an exporter
 * (`otlp`, or `console` to print spans): an operator who sets nothing gets no tracing and no
 * OpenTelemetry code loaded. OTEL_SDK_DISABLED=true turns it off whatever else is set, as the spec says.
 * Everything else (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_BSP_*) is read by the SDK itself.
 */
export type TraceExporterName = 'otlp' | 'console';

export function tracesExporterOf(
  env: Readonly<Record<string, string | undefined>>,
): TraceExporterName | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const names = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  if (names.length === 0 || names.includes('none')) return undefined;
  if (names.includes('otlp')) return 'otlp';
  if (names.includes('console')) return 'console';
  throw new Error(
    `OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER}: gate402 exports traces with otlp (OTLP over HTTP/protobuf) or console; none turns tracing off`,
  );
}
