import { canonicalAddress } from '../../chains/canonical-address.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { toWholeUnits } from '../../domain/money.ts';

export interface PortfolioToken {
  /** The account (Solana token account) or contract (EVM) holding the balance. */
  account: string;
  mint: string;
  /** spl-token, spl-token-2022 or erc20. */
  program: string;
  decimals: number;
  /** Atomic units, decimal text. */
  amount: string;
  uiAmount: number;
  /** The symbol when GET /networks lists the token (the network's own or X402_EXTRA_ASSETS); null otherwise. */
  symbol: string | null;
}

export interface PortfolioView {
  publicKey: string;
  network: string;
  native: { symbol: string; decimals: number; amount: string; uiAmount: number };
  tokens: PortfolioToken[];
}

/**
 * What a wallet holds (spec §4.8): its native balance and every token account. Any address may be
 * asked about; an empty wallet is a valid answer. Two chain reads in parallel, so one round trip long.
 */
export class PortfolioService {
  constructor(private readonly networks: NetworkRegistry) {}

  async portfolio(publicKey: string, network?: string): Promise<PortfolioView> {
    const chain = this.networks.resolve({ address: publicKey, network, field: 'public_key' });
    // The network's own tokens and the operator's (X402_EXTRA_ASSETS), as GET /networks lists them:
    // what an EVM address is asked about, and the symbols shown.
    const listed = this.networks.tokensOf(chain.info.id);
    const [lamports, holdings] = await Promise.all([
      chain.getBalance(publicKey),
      chain.getTokenAccounts(publicKey, listed),
    ]);
    const { symbol, decimals } = chain.info.nativeCurrency;
    const known = new Map(listed.map((t) => [canonicalAddress(t.address), t.symbol]));
    return {
      // EVM: checksummed, as every EVM address gate402 answers, whatever case was asked.
      publicKey: canonicalAddress(publicKey),
      network: chain.info.id,
      native: { symbol, decimals, amount: lamports.toString(), uiAmount: toWholeUnits(lamports, decimals) },
      tokens: holdings
        .map((h) => ({
          account: h.address,
          mint: h.mint,
          program: h.program,
          decimals: h.decimals,
          amount: h.amount.toString(),
          uiAmount: toWholeUnits(h.amount, h.decimals),
          symbol: known.get(canonicalAddress(h.mint)) ?? null,
        }))
        .sort((a, b) => (a.mint < b.mint ? -1 : a.mint > b.mint ? 1 : a.account < b.account ? -1 : 1)),
    };
  }
}
