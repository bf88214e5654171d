import { parseArgs } from 'node:util';
import { NetworkRegistry } from '../chains/network-registry.ts';
import { loadMasterKey } from '../services/custody/master-key.ts';
import { SecretBox } from '../services/custody/secret-box.ts';
import type { WalletView } from '../services/wallet-service.ts';
import { WalletService } from '../services/wallet-service.ts';
import { openStore, storageLocation } from '../store/open-store.ts';
import { type CliContext, requiredFlag, unknownSubcommand } from './cli-context.ts';

const FLAGS = {
  account: { type: 'string' },
  chain: { type: 'string' },
  address: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * Wallets from the command line. No chain needs to run: a key pair serves every network of its family,
 * so the wallet's `network` is left empty here and the family's default network is used when it pays.
 */
export async function walletsCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({ args: rest, options: FLAGS, allowPositionals: false });
  const accountId = requiredFlag(values, 'account');
  const chain = requiredFlag(values, 'chain');
  const { store } = await openStore(storageLocation(ctx.config));
  try {
    await ctx.accountsExist(store, accountId);
    const masterKey = loadMasterKey(ctx.config, (message) => process.stderr.write(`gate402: ${message}\n`));
    const wallets = new WalletService(store, new NetworkRegistry([]), new SecretBox(masterKey));
    let wallet: WalletView;
    switch (sub) {
      case 'create':
        wallet = await wallets.create(accountId, { chain });
        break;
      case 'watch':
        wallet = await wallets.watch(accountId, { chain, address: requiredFlag(values, 'address') });
        break;
      default:
        throw unknownSubcommand('wallets', sub, ['create', 'watch']);
    }
    ctx.result(
      wallet,
      `${wallet.watchOnly ? 'watching' : 'created'} ${wallet.chain} wallet ${wallet.address} for ${accountId}`,
    );
  } finally {
    await store.close();
  }
}
