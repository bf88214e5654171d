import { parseArgs } from 'node:util';
import type { ApiKeyRecord } from '../domain/records/account-records.ts';
import { type CliContext, requiredFlag, UsageError, unknownSubcommand, withAccounts } from './cli-context.ts';

export const FLAGS = {
  account: { type: 'string' },
  name: { type: 'string' },
  admin: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

export async function keysCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({ args: rest, options: FLAGS, allowPositionals: true });
  switch (sub) {
    case 'create': {
      const accountId = requiredFlag(values, 'account');
      // --admin: the key may read and set the account's spend policies (give agents keys without it).
      const scopes = values.admin === true ? (['admin'] as const) : [];
      const created = await withAccounts(ctx, (accounts) =>
        accounts.createKey(accountId, values.name, scopes),
      );
      return ctx.result(
        { ...keyJson(created.record), key: created.key },
        [
          `created ${created.record.id} for ${accountId}. The key is shown this once; store it now:`,
          '',
          `  ${created.key}`,
          '',
          'Rotation: create a new key, switch your application to it, then revoke the old one.',
        ].join('\n'),
      );
    }
    case 'list': {
      const accountId = requiredFlag(values, 'account');
      const keys = await withAccounts(ctx, (accounts) => accounts.listKeys(accountId));
      return ctx.result(keys.map(keyJson), keys.map(describe).join('\n') || 'no keys');
    }
    case 'revoke': {
      const id = positionals[0];
      if (id === undefined) throw new UsageError('KEY_ID is required');
      const revoked = await withAccounts(ctx, (accounts) => accounts.revokeKey(id));
      return ctx.result(keyJson(revoked), `revoked ${revoked.id}`);
    }
    default:
      throw unknownSubcommand('keys', sub, ['create', 'list', 'revoke']);
  }
}

/** A key as shown to people and scripts: never the secret, never its hash. */
export function keyJson(key: ApiKeyRecord) {
  return {
    id: key.id,
    accountId: key.accountId,
    name: key.name,
    prefix: key.displayPrefix,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt,
    revokedAt: key.revokedAt,
    scopes: key.scopes,
  };
}

function describe(key: ApiKeyRecord): string {
  const state = key.revokedAt === null ? 'active' : `revoked ${new Date(key.revokedAt).toISOString()}`;
  const used = key.lastUsedAt === null ? 'never used' : `last used ${new Date(key.lastUsedAt).toISOString()}`;
  const scopes = key.scopes.length === 0 ? '' : `  [${key.scopes.join(' ')}]`;
  return `${key.id}  ${key.name}  ${key.displayPrefix}…  ${state}  ${used}${scopes}`;
}
