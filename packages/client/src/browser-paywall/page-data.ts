/**
 * What the paywall page's script is told, as JSON inside the page: the offer and, for each option a
 * browser wallet can pay, what building the payment needs. Shared by the server side (which writes it)
 * and the page (paywall-page/, bundled at build time), so no Node or DOM type appears here.
 */
export interface PaywallPageData {
  /** The x402 v2 challenge: the page pays one of its `accepts` and names it as `accepted`. */
  readonly paymentRequired: {
    readonly x402Version: 2;
    readonly resource: { readonly url: string; readonly description?: string; readonly mimeType?: string };
    readonly accepts: readonly Record<string, unknown>[];
  };
  /** The options a browser wallet can pay, in the order offered. */
  readonly options: readonly PaywallPageOption[];
  /** The request header the page sends to ask the paywall for a fresh Solana blockhash. */
  readonly blockhashHeader: string;
}

interface OptionBase {
  /** Index into `paymentRequired.accepts`. */
  readonly index: number;
  /** For people: `0.01 USDC on Solana Localnet`. */
  readonly label: string;
  /** The price for people: `0.01 USDC`. */
  readonly price: string;
}

/** An `exact` SPL token payment: a transaction the buyer signs and the facilitator's fee payer pays for. */
export interface SolanaExactOption extends OptionBase {
  readonly kind: 'solana-exact';
  /** The wallet-standard chain: `solana:mainnet`, `solana:devnet`, `solana:testnet`, `solana:localnet`. */
  readonly chain: string;
  /** The mint's owner program (SPL Token or Token-2022). */
  readonly tokenProgram: string;
  readonly decimals: number;
}

/** An `exact` EIP-3009 payment: a TransferWithAuthorization the buyer signs (eth_signTypedData_v4). */
export interface EvmExactOption extends OptionBase {
  readonly kind: 'evm-eip3009';
  readonly chainId: number;
}

export type PaywallPageOption = SolanaExactOption | EvmExactOption;

/** What the paywall answers the page's blockhash request with. */
export interface BlockhashAnswer {
  readonly blockhash: string;
  /** A decimal string (u64). */
  readonly lastValidBlockHeight: string;
}
