import { canonicalAddress } from '../../chains/canonical-address.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { openTokenAccount, tokenAccountOf } from '../../chains/solana/open-token-account.ts';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import type { WalletService } from './wallet-service.ts';

/** POST /wallets/{address}/token-accounts: the wallet's token account for an asset, opened if it can be. */
export interface TokenAccountAnswer {
  readonly walletAddress: string;
  readonly network: string;
  /** The mint. */
  readonly asset: string;
  /** The associated token account: where x402 `exact` payments to the wallet in `asset` go. */
  readonly account: string;
  readonly exists: boolean;
  /** Opened by this request (the wallet paid the fee and the rent-exempt deposit); false when it existed. */
  readonly created: boolean;
  readonly signature: string | null;
}

/**
 * Solana token accounts of the caller's wallets. An x402 `exact` payment on Solana is a transferChecked
 * into the payee's associated token account, which must exist: the buyer's transaction does not open it,
 * so a payee without one can never be paid (every payment fails its simulation). A custodial wallet's
 * account is opened here, the wallet paying the transaction fee and the rent-exempt deposit (about
 * 0.002 SOL, returned if the account is ever closed) from its own SOL — nobody else's money, so asking is
 * safe for anyone who holds the wallet, and asking again is free. A watch-only wallet's is only looked
 * at: the gateway holds no key to open it.
 */
export class TokenAccountService {
  constructor(
    private readonly wallets: WalletService,
    private readonly networks: NetworkRegistry,
  ) {}

  async ensure(
    accountId: string,
    walletAddress: string,
    input: { readonly asset: string; readonly network?: string | undefined },
  ): Promise<TokenAccountAnswer> {
    const wallet = await this.wallets.owned(accountId, walletAddress, 'address');
    const chain = this.networks.resolve({
      address: wallet.address,
      network: input.network,
      field: 'address',
    });
    if (chain.info.family !== 'solana') {
      throw invalidParameters({ address: 'holds tokens without a token account (EVM): nothing to open' });
    }
    const listed = this.networks
      .tokensOf(chain.info.id)
      .find((t) => t.symbol.toLowerCase() === input.asset.toLowerCase() || t.address === input.asset);
    const mint = listed?.address ?? input.asset;
    const known = await tokenAccountOf(chain.endpoints, wallet.address, mint).catch((error: unknown) => {
      // A string that is no address: the chain library refuses to read it.
      if (error instanceof Error && /address/i.test(error.message) && !/rpc/i.test(error.message))
        return undefined;
      throw error;
    });
    if (known === undefined) {
      throw new GatewayError('TOKEN_NOT_FOUND', {
        message: `${input.asset} is neither a token ${chain.info.name} lists (GET /networks) nor a mint on it.`,
        details: { asset: 'is not a token mint on this network' },
      });
    }
    const answer = (state: { exists: boolean; signature?: string | undefined }) => ({
      walletAddress: wallet.address,
      network: chain.info.id,
      asset: canonicalAddress(mint),
      account: known.account,
      exists: state.exists,
      created: state.signature !== undefined,
      signature: state.signature ?? null,
    });
    if (known.exists || wallet.watchOnly) return answer(known);
    const { secretKey } = await this.wallets.signer(accountId, wallet.address);
    const opened = await openTokenAccount(chain.endpoints, secretKey, wallet.address, mint);
    return answer(opened ?? known);
  }
}
