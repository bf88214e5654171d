// The embedded localnet's process: started by startLocalnetProcess (localnet-process.ts) with fork(), it
// runs the chain and reports over the IPC channel. It stops, flushing its ledger, when told to
// (SIGTERM, SIGINT) or when the gateway goes away by any means, a SIGKILL included: the IPC channel
// then closes and 'disconnect' fires, so no orphan keeps the ports.
import { startLocalnet } from '@gate402/localnet';
import type { LocalnetChildMessage, LocalnetChildOptions } from './localnet-process.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as LocalnetChildOptions;
const report = (message: LocalnetChildMessage) => process.send?.(message);

try {
  const localnet = await startLocalnet({
    port: options.port,
    ledgerDir: options.ledgerDir,
    slotMs: options.slotMs,
    logger: {
      info: (message) => report({ type: 'log', level: 'info', message }),
      error: (message, error) =>
        report({
          type: 'log',
          level: 'error',
          message: error === undefined ? message : `${message}: ${String(error)}`,
        }),
    },
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void localnet.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);
  report({
    type: 'ready',
    rpcUrl: localnet.rpcUrl,
    wsUrl: localnet.wsUrl,
    network: localnet.network,
    mintAuthorityFile: localnet.mintAuthority.keypairPath ?? '',
  });
} catch (error) {
  report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
