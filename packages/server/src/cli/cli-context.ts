import { type Config, loadConfig } from '../config.ts';
import { GatewayError } from '../domain/gateway-error.ts';
import { AccountService } from '../services/accounts/account-service.ts';
import { openStore, storageLocation } from '../store/open-store.ts';
import type { Store } from '../store/store.ts';

/** What every command gets: the parsed flags, an output channel honouring --json, and storage. */
export interface CliContext {
  readonly json: boolean;
  readonly config: Config;
  /** Human text, or nothing with --json. */
  say(text: string): void;
  /** The command's result: JSON with --json, else the human text given. */
  result(value: unknown, human: string): void;
  /** Refuses with NOT_FOUND when the account does not exist. */
  accountsExist(store: Store, accountId: string): Promise<void>;
}

/** Thrown for wrong usage; main prints the message and the command's usage line. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** For a command group called without a subcommand it knows, or with none: names the ones it has. */
export function unknownSubcommand(
  group: string,
  sub: string | undefined,
  known: readonly string[],
): UsageError {
  const which = known.join(', ');
  return new UsageError(
    sub === undefined
      ? `${group} needs a subcommand: ${which}`
      : `unknown command: ${group} ${sub} (${group} has ${which})`,
  );
}

export function createContext(json: boolean, env: NodeJS.ProcessEnv = process.env): CliContext {
  const config = loadConfig(env);
  return {
    json,
    config,
    say: (text) => {
      if (!json) process.stdout.write(`${text}\n`);
    },
    result: (value, human) => {
      process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human}\n`);
    },
    accountsExist: async (store, accountId) => {
      if ((await store.accounts.get(accountId)) === undefined) {
        throw new GatewayError('NOT_FOUND', { message: `No account ${accountId}.` });
      }
    },
  };
}

/** Opens the same storage the server uses (DATA_DIR or DATABASE_URL), runs `work`, closes it. */
export async function withAccounts<T>(
  ctx: CliContext,
  work: (accounts: AccountService) => Promise<T>,
): Promise<T> {
  const { store } = await openStore(storageLocation(ctx.config));
  try {
    return await work(new AccountService(store));
  } finally {
    await store.close();
  }
}

export function requiredFlag(flags: Record<string, unknown>, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function optionalInteger(flags: Record<string, unknown>, name: string): number | undefined {
  const value = flags[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) {
    throw new GatewayError('INVALID_PARAMETERS', {
      message: `--${name} must be a whole number.`,
      details: { [name]: 'must be a whole number' },
    });
  }
  return Number(value);
}
