import { createLogger, startServer } from '../server.ts';
import type { CliContext } from './cli-context.ts';

const SHUTDOWN_GRACE_MS = 10_000;

/**
 * `gate402 serve`: runs the gateway until SIGINT or SIGTERM, then shuts down gracefully. With TLS, SIGHUP
 * reads the certificate files again (after a renewal) without dropping a connection.
 */
export async function serveCommand(ctx: CliContext): Promise<void> {
  const logger = createLogger(ctx.config);
  const server = await startServer(ctx.config, logger);
  logger.info({ url: server.url }, 'gate402 listening');

  const lines = [
    `gate402 is listening on ${server.url}  (API docs: ${server.url}/docs)`,
    `Web dashboard: ${server.url}/dashboard`,
  ];
  if (server.demo !== undefined) {
    lines.push(
      '',
      `A demo account (${server.demo.accountId}, Standard plan) was created with this API key.`,
      'It is shown only now; keep it somewhere safe:',
      '',
      `  ${server.demo.key}`,
      '',
      'Try it:',
      '',
      `  curl -H "Authorization: Bearer ${server.demo.key}" ${server.url}/account`,
    );
  }
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
      server.close().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'error during shutdown');
        resolve();
      });
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
}
