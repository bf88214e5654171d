import { parseArgs } from 'node:util';
import type { AccountView } from '../services/accounts/account-service.ts';
import {
  type CliContext,
  optionalInteger,
  requiredFlag,
  UsageError,
  unknownSubcommand,
  withAccounts,
} from './cli-context.ts';

export const FLAGS = {
  name: { type: 'string' },
  plan: { type: 'string' },
  'rate-limit': { type: 'string' },
  json: { type: 'boolean' },
} as const;

export async function accountsCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({ args: rest, options: FLAGS, allowPositionals: true });
  switch (sub) {
    case 'create': {
      const account = await withAccounts(ctx, (accounts) =>
        accounts.createAccount({
          name: requiredFlag(values, 'name'),
          plan: requiredFlag(values, 'plan'),
          ...optional('rateLimit', optionalInteger(values, 'rate-limit')),
        }),
      );
      return ctx.result(accountJson(account), `created ${describe(account)}`);
    }
    case 'set-plan': {
      const id = positionals[0];
      if (id === undefined) throw new UsageError('ACCOUNT_ID is required');
      const account = await withAccounts(ctx, (accounts) =>
        accounts.setPlan(id, {
          plan: requiredFlag(values, 'plan'),
          ...optional('rateLimit', optionalInteger(values, 'rate-limit')),
        }),
      );
      return ctx.result(accountJson(account), `updated ${describe(account)}`);
    }
    case 'list': {
      const list = await withAccounts(ctx, (accounts) => accounts.listAccounts());
      return ctx.result(list.map(accountJson), list.map(describe).join('\n') || 'no accounts');
    }
    default:
      throw unknownSubcommand('accounts', sub, ['create', 'set-plan', 'list']);
  }
}

export function accountJson(account: AccountView) {
  return {
    id: account.id,
    name: account.name,
    plan: account.plan,
    rateLimit: account.rateLimit,
    createdAt: account.createdAt,
    updatedAt: account.updatedAt,
  };
}

function describe(account: AccountView): string {
  return `${account.id}  ${account.name}  ${account.plan}  ${account.rateLimit} requests/min`;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
