import { ConfigError } from '../config.ts';
import { GatewayError, toErrorBody } from '../domain/gateway-error.ts';
import { GATE402_VERSION } from '../version.ts';
import { type CliContext, createContext, UsageError } from './cli-context.ts';
import {
  ACCOUNTS_USAGE,
  DASHBOARD_USAGE,
  FAUCET_USAGE,
  KEYS_USAGE,
  WALLETS_USAGE,
  WEBHOOKS_USAGE,
} from './usage.ts';

const USAGE = `gate402 ${GATE402_VERSION}: self-hostable x402 payment gateway

Usage:
  gate402 serve                     run the gateway (what \`npm start\` runs)
  gate402 migrate                   bring storage to the newest schema
  gate402 localnet [--port N] [--ledger DIR] [--slot-ms N]
                                    run the Solana localnet alone, like solana-test-validator
${ACCOUNTS_USAGE.replace(/^/gm, '  ')}
${KEYS_USAGE.replace(/^/gm, '  ')}
${WALLETS_USAGE.replace(/^/gm, '  ')}
${WEBHOOKS_USAGE.replace(/^/gm, '  ')}
${DASHBOARD_USAGE.replace(/^/gm, '  ')}
${FAUCET_USAGE.replace(/^/gm, '  ')}

Storage is the same as the server's: DATABASE_URL if set, else the SQLite file in DATA_DIR (default ./data).
With --json a command prints only JSON.`;

/** Runs one command; returns the exit code (0 ok, 1 refused, 2 wrong usage or configuration). */
export async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const json = args.includes('--json');
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command === '--version' || command === 'version') {
    process.stdout.write(`${GATE402_VERSION}\n`);
    return 0;
  }
  try {
    const ctx = createContext(json);
    await run(ctx, command, args);
    return 0;
  } catch (error) {
    return report(error, json);
  }
}

/** Commands load what they need when they run, so `gate402 keys list` does not pay for the HTTP stack. */
async function run(ctx: CliContext, command: string, args: string[]): Promise<void> {
  switch (command) {
    case 'serve':
      noArguments(command, args);
      return (await import('./serve-command.ts')).serveCommand(ctx);
    case 'migrate': {
      noArguments(command, args);
      // Opening storage migrates it; report what was applied.
      const { openStore, storageLocation } = await import('../store/open-store.ts');
      const { store, migrated } = await openStore(storageLocation(ctx.config));
      await store.close();
      return ctx.result(
        { migrated },
        migrated.length > 0 ? `applied: ${migrated.join(', ')}` : 'already current',
      );
    }
    case 'localnet': {
      const { runLocalnetCli } = await import('@gate402/localnet');
      await runLocalnetCli(args);
      return;
    }
    case 'accounts':
      return (await import('./account-commands.ts')).accountsCommand(ctx, args);
    case 'keys':
      return (await import('./key-commands.ts')).keysCommand(ctx, args);
    case 'wallets':
      return (await import('./wallet-commands.ts')).walletsCommand(ctx, args);
    case 'webhooks':
      return (await import('./webhook-commands.ts')).webhooksCommand(ctx, args);
    case 'dashboard':
      return (await import('./dashboard-commands.ts')).dashboardCommand(ctx, args);
    case 'faucet':
      return (await import('./faucet-command.ts')).faucetCommand(ctx, args);
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

/**
 * serve and migrate are configured by the environment alone. An argument is refused rather than
 * ignored: `gate402 serve --port 9000` would otherwise serve on the default port without a word.
 */
function noArguments(command: string, args: string[]): void {
  const extra = args.filter((arg) => arg !== '--json');
  if (extra.length === 0) return;
  throw new UsageError(
    `${command} takes no arguments (got ${extra.join(' ')}); it is configured by environment variables, e.g. PORT=9000 DATA_DIR=./data gate402 ${command}`,
  );
}

function report(error: unknown, json: boolean): number {
  if (error instanceof UsageError || isParseArgsError(error)) {
    process.stderr.write(`gate402: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`gate402: ${error.message}\n`);
    return 2;
  }
  if (error instanceof GatewayError) {
    if (json) process.stdout.write(`${JSON.stringify(toErrorBody(error))}\n`);
    else {
      const details = Object.entries(error.details ?? {}).map(([field, rule]) => `\n  ${field}: ${rule}`);
      process.stderr.write(`gate402: ${error.message}${details.join('')}\n`);
    }
    return 1;
  }
  process.stderr.write(`gate402: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}
