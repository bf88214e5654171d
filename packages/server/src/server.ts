import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { NetworkRegistry } from './chains/network-registry.ts';
import type { Config } from './config.ts';
import {
  createGateway,
  createLogger,
  type DemoAccount,
  type Gateway,
  type GatewayOverrides,
} from './gateway.ts';
import type { GatewayServices } from './services/gateway-services.ts';
import type { Store } from './store/store.ts';

export { createLogger, type DemoAccount, REDACTED_LOG_PATHS } from './gateway.ts';

export interface RunningServer {
  readonly app: FastifyInstance;
  /** The base URL the API listens on, e.g. http://127.0.0.1:8402. */
  readonly url: string;
  readonly demo: DemoAccount | undefined;
  /** The parts it runs on, for tools that embed the gateway (benchmarks, tests). */
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly services: GatewayServices;
  readonly gateway: Gateway;
  /** Stops accepting requests, lets the ones in flight finish, then closes storage and Redis. */
  close(): Promise<void>;
}

/** `gate402 serve`: the gateway as the configuration says, every job running, listening on HOST:PORT. */
export async function startServer(
  config: Config,
  logger: Logger = createLogger(config),
  options: Pick<GatewayOverrides, 'facilitatorHooks'> = {},
): Promise<RunningServer> {
  const gateway = await createGateway(config, { ...options, logger });
  try {
    gateway.startJobs();
    const url = await gateway.listen();
    return {
      app: gateway.app,
      url,
      demo: gateway.demo,
      store: gateway.store,
      networks: gateway.networks,
      services: gateway.services,
      gateway,
      close: () => gateway.close(),
    };
  } catch (error) {
    await gateway.close();
    throw error;
  }
}
