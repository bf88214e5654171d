import { canonicalAddress } from '../../chains/canonical-address.ts';
import { decimalTextToAtomic } from '../../domain/money.ts';
import type { NetworkInfo } from '../../domain/network.ts';
import {
  DEFAULT_FEE_BUDGET,
  DEFAULT_MAX_OPEN_UPTO_CHANNELS,
  DEFAULT_MAX_UNSETTLED_APPROVAL_FUNDINGS,
  DEFAULT_MAX_UPTO_CHANNEL_RENT,
  DEFAULT_MIN_SETTLE_AMOUNT,
} from '../../domain/sponsored-fees.ts';

/** What the operator configured (X402_FEE_BUDGET, X402_MIN_SETTLE_AMOUNT): whole units as decimal text. */
export interface FeeBudgetSettings {
  /** By family (`solana`, `evm`) or CAIP-2 id; an id overrides its family. */
  readonly budgets?: Readonly<Record<string, string>>;
  /** By token symbol (as GET /networks lists it) or mint / contract address. */
  readonly minimums?: Readonly<Record<string, string>>;
  /** X402_UPTO_MAX_OPEN_CHANNELS: escrow `upto` channels (Solana) one account may hold open per network. */
  readonly maxOpenUptoChannels?: number;
  /**
   * X402_UPTO_MAX_CHANNEL_RENT: the fee payer's rent one account's escrow `upto` channels may hold per
   * network, whole units of its native currency (SOL).
   */
  readonly maxUptoChannelRent?: string;
  /**
   * X402_MAX_UNSETTLED_APPROVAL_FUNDINGS: buyer approvals whose gas one account's settlements had funded
   * (erc20ApprovalGasSponsoring) and that have not settled, per network and UTC day.
   */
  readonly maxUnsettledApprovalFundings?: number;
}

/** The smallest payment settled in one asset, and how the configuration named it (for the message). */
export interface SettleMinimum {
  readonly atomic: bigint;
  readonly text: string;
  readonly name: string;
}

/**
 * What the built-in facilitator's fee payer may spend per account: a daily budget of network fees per
 * network (atomic units of its native currency), and the smallest payment it settles per asset. Pure
 * configuration, read once; the spending itself is kept in storage (SponsoredFeeRepository).
 */
export class FeeBudget {
  private readonly budgets: Readonly<Record<string, string>>;
  private readonly minimums: Readonly<Record<string, string>>;
  /**
   * How many escrow `upto` deposits (Solana payment channels) one account may hold unclaimed on one
   * network. See upto-open-channels.
   */
  readonly maxOpenUptoChannels: number;
  /** X402_UPTO_MAX_CHANNEL_RENT as configured (whole units); see uptoChannelRentLimit. */
  readonly maxUptoChannelRent: string;
  /** See FeeBudgetSettings.maxUnsettledApprovalFundings and approval-funding-limits. */
  readonly maxUnsettledApprovalFundings: number;

  constructor(settings: FeeBudgetSettings = {}) {
    this.budgets = { ...DEFAULT_FEE_BUDGET, ...settings.budgets };
    this.minimums = settings.minimums ?? DEFAULT_MIN_SETTLE_AMOUNT;
    this.maxOpenUptoChannels = settings.maxOpenUptoChannels ?? DEFAULT_MAX_OPEN_UPTO_CHANNELS;
    this.maxUptoChannelRent = settings.maxUptoChannelRent ?? DEFAULT_MAX_UPTO_CHANNEL_RENT;
    this.maxUnsettledApprovalFundings =
      settings.maxUnsettledApprovalFundings ?? DEFAULT_MAX_UNSETTLED_APPROVAL_FUNDINGS;
  }

  /** The daily budget of one account on `network`, atomic units of its native currency. */
  dailyLimit(network: NetworkInfo): bigint {
    const text = this.budgets[network.id] ?? this.budgets[network.family] ?? '0';
    return decimalTextToAtomic(text, network.nativeCurrency.decimals);
  }

  /**
   * The rent of the fee payer's one account's escrow `upto` channels may hold on `network` (each holds it
   * from its deposit until its accounts are closed, which a daily fee budget does not bound: its fee is
   * charged once, the rent comes back later), atomic units of its native currency. See upto-open-channels.
   */
  uptoChannelRentLimit(network: NetworkInfo): bigint {
    return decimalTextToAtomic(this.maxUptoChannelRent, network.nativeCurrency.decimals);
  }

  /**
   * The smallest payment in `asset` settled on `network`, if the configuration names one: by the
   * asset's address, else by the symbol the network lists it under. `decimals`: the asset's, asked
   * only when a minimum applies (an unlisted token's come from the chain).
   */
  async minimum(
    network: NetworkInfo,
    asset: string,
    decimals: () => Promise<number>,
  ): Promise<SettleMinimum | undefined> {
    const address = canonicalAddress(asset);
    const byAddress = Object.keys(this.minimums).find((key) => canonicalAddress(key) === address);
    const symbol = network.tokens.find((t) => canonicalAddress(t.address) === address)?.symbol;
    const name =
      byAddress ?? (symbol !== undefined && this.minimums[symbol] !== undefined ? symbol : undefined);
    if (name === undefined) return undefined;
    const text = this.minimums[name] ?? '0';
    // More decimals than the token has: the smallest amount that is at least the one configured.
    const places = await decimals();
    const [whole = '0', fraction = ''] = text.split('.');
    const atomic =
      decimalTextToAtomic(`${whole}.${fraction.slice(0, places) || '0'}`, places) +
      (/[1-9]/.test(fraction.slice(places)) ? 1n : 0n);
    return { atomic, text, name };
  }
}
