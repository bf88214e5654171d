import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type RunningServer, startServer } from 'gate402';

export interface InProcessGateway {
  /** The gateway's base URL, e.g. http://127.0.0.1:40123. */
  readonly url: string;
  readonly server: RunningServer;
  /** A new account on the plan and one API key for it (the secret). */
  newApiKey(plan?: 'standard' | 'premium' | 'enterprise'): Promise<string>;
  close(): Promise<void>;
}

/**
 * The real gateway as `npm start` runs it — SQLite in a temporary DATA_DIR, the embedded Solana localnet
 * and anvil — on free ports, listening on loopback, so the client talks to it over HTTP like any caller.
 * Slots are short so payments confirm quickly.
 */
export async function startGateway(env: Record<string, string> = {}): Promise<InProcessGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gate402-client-'));
  const config = loadConfig({
    PORT: '0',
    LOCALNET_PORT: '0',
    ANVIL_PORT: '0',
    LOCALNET_SLOT_MS: '20',
    RECONCILE_INTERVAL_MS: '200',
    DATA_DIR: dataDir,
    GATE402_DEMO: 'false',
    LOG_LEVEL: 'silent',
    ...env,
  });
  let server: RunningServer;
  try {
    server = await startServer(config);
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: server.url,
    server,
    newApiKey: async (plan = 'standard') => {
      const account = await server.services.accounts.createAccount({ name: `client test ${plan}`, plan });
      return (await server.services.accounts.createKey(account.id, 'test')).key;
    },
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
