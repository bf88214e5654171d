// Run in a child process by the tracing tests: starts tracing as `gate402 serve` does (from the OTEL_*
// environment), builds a gateway on a temporary SQLite file, serves one request, closes.
import { startTracingFromEnv } from '../../src/telemetry/start-tracing.ts';
import { startTestGateway } from './test-gateway.ts';

const tracing = await startTracingFromEnv(process.env);
const gw = await startTestGateway();
const res = await gw.app.inject({ method: 'GET', url: '/healthz' });
await gw.close();
await tracing?.shutdown();
process.stdout.write(`served ${res.statusCode}\n`);
