import { FEATURES, type PlanAccess } from '../domain/plan-access.ts';
import { createLogger, type DemoAccount, startServer } from '../server.ts';
import { startTracingFromEnv } from '../telemetry/start-tracing.ts';
import type { CliContext } from './cli-context.ts';

const SHUTDOWN_GRACE_MS = 10_000;

/**
 * `gate402 serve`: runs the gateway until SIGINT or SIGTERM, then shuts down gracefully. With TLS, SIGHUP
 * reads the certificate files again (after a renewal) without dropping a connection.
 */
export async function serveCommand(ctx: CliContext): Promise<void> {
  const logger = createLogger(ctx.config);
  // Before the gateway is built: its request hooks are installed only if tracing is on by then.
  const tracing = await startTracingFromEnv(process.env);
  if (tracing !== undefined) logger.info('OpenTelemetry tracing on (OTEL_TRACES_EXPORTER)');
  const server = await startServer(ctx.config, logger);
  logger.info({ url: server.url }, 'gate402 listening');

  const lines = [
    `gate402 is listening on ${server.url}  (API docs: ${server.url}/docs)`,
    `Web dashboard: ${server.url}/dashboard`,
  ];
  if (server.demo !== undefined)
    lines.push('', ...demoBanner(server.demo, server.url, ctx.config.planAccess));
  process.stdout.write(`\n${lines.join('\n')}\n\n`);

  // Only with TLS: on plain HTTP there is nothing to reload, and SIGHUP keeps its usual meaning.
  const reload = () => server.gateway.reloadTls();
  if (server.gateway.tls !== undefined) process.on('SIGHUP', reload);

  await new Promise<void>((resolve) => {
    const shutdown = (signal: NodeJS.Signals) => {
      logger.info({ signal }, 'shutting down');
      // If something hangs, leave anyway: an orchestrator is waiting for the process to end.
      setTimeout(() => {
        logger.error('shutdown took too long; exiting');
        process.exit(1);
      }, SHUTDOWN_GRACE_MS).unref();
      // Tracing last, so the spans of the requests that finished during the shutdown are sent too.
      server
        .close()
        .then(() => tracing?.shutdown())
        .then(resolve, (error: unknown) => {
          logger.error({ err: error }, 'error during shutdown');
          resolve();
        });
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
}

/**
 * The demo account's secrets, printed once to stdout and never through the logger (whose lines may be
 * shipped elsewhere): only the person who started the gateway sees them.
 */
export function demoBanner(demo: DemoAccount, url: string, planAccess: PlanAccess): string[] {
  const plan = `${demo.plan[0]?.toUpperCase()}${demo.plan.slice(1)} plan`;
  const granted = planAccess[demo.plan].size;
  const features =
    granted === FEATURES.length ? 'every feature' : `${granted} of ${FEATURES.length} features`;
  return [
    `A demo account (${demo.accountId}, ${plan}: ${features}) was created.`,
    'Its secrets are shown only now; keep them somewhere safe.',
    '',
    `  API key:            ${demo.key}`,
    ...(demo.dashboardLogin === undefined
      ? []
      : [
          `  Dashboard log-in:   ${demo.dashboardLogin.email}`,
          `  Dashboard password: ${demo.dashboardLogin.password}`,
          `                      (log in at ${url}/dashboard; change it on its Password page)`,
        ]),
    '',
    'Try it:',
    '',
    `  curl -H "Authorization: Bearer ${demo.key}" ${url}/account`,
  ];
}
