import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NetworkRegistry } from '../chains/network-registry.ts';
import { loadMasterKey } from '../services/custody/master-key.ts';
import { SecretBox } from '../services/custody/secret-box.ts';
import { WalletService } from '../services/wallets/wallet-service.ts';
import { openStore, storageLocation } from '../store/open-store.ts';
import { type CliContext, requiredFlag, UsageError, unknownSubcommand } from './cli-context.ts';

export const FLAGS = {
  account: { type: 'string' },
  chain: { type: 'string' },
  address: { type: 'string' },
  challenge: { type: 'string' },
  'challenge-file': { type: 'string' },
  signature: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * Wallets from the command line. No chain needs to run: a key pair serves every network of its family,
 * so the wallet's `network` is left empty here and the family's default network is used when it pays.
 * Watching an address takes the same proof of control as POST /wallets: `challenge` prints a text,
 * the address's key signs it, `watch` checks the signature (offline) and registers the address.
 */
export async function walletsCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({ args: rest, options: FLAGS, allowPositionals: false });
  if (sub !== 'create' && sub !== 'watch' && sub !== 'challenge')
    throw unknownSubcommand('wallets', sub, ['create', 'challenge', 'watch']);
  const accountId = requiredFlag(values, 'account');
  const chain = requiredFlag(values, 'chain');
  const { store } = await openStore(storageLocation(ctx.config));
  try {
    await ctx.accountsExist(store, accountId);
    const masterKey = loadMasterKey(ctx.config, (message) => process.stderr.write(`gate402: ${message}\n`));
    const wallets = new WalletService(store, new NetworkRegistry([]), new SecretBox(masterKey));
    if (sub === 'challenge') {
      const issued = await wallets.challenge(accountId, { chain, address: requiredFlag(values, 'address') });
      // The text alone, so `> file` or "$(…)" gives exactly what is to be signed.
      ctx.result(issued, issued.challenge);
      return;
    }
    const wallet =
      sub === 'create'
        ? await wallets.create(accountId, { chain })
        : await wallets.watch(accountId, {
            chain,
            address: requiredFlag(values, 'address'),
            challenge: challengeText(values),
            signature: requiredFlag(values, 'signature'),
          });
    ctx.result(
      wallet,
      `${wallet.watchOnly ? 'watching' : 'created'} ${wallet.chain} wallet ${wallet.address} for ${accountId}`,
    );
  } finally {
    await store.close();
  }
}

/** The challenge text: given inline (--challenge "$(cat file)") or as the file `challenge` wrote. */
function challengeText(values: { challenge?: string; 'challenge-file'?: string }): string {
  const inline = values.challenge;
  const file = values['challenge-file'];
  if ((inline === undefined) === (file === undefined))
    throw new UsageError('watch needs exactly one of --challenge TEXT and --challenge-file FILE');
  return inline ?? readFileSync(file ?? '', 'utf8');
}
