import { canonicalAddress } from '../../chains/canonical-address.ts';
import type { ChainTokenAccount } from '../../chains/chain-adapter.ts';
import { chainFamily } from '../../chains/chain-families.ts';
import { KEYPAIR_GENERATORS } from '../../chains/keypairs.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { addressFamily, CHAIN_FAMILIES, type ChainFamily } from '../../domain/address.ts';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import { newId } from '../../domain/ids.ts';
import { toWholeUnits } from '../../domain/money.ts';
import type { TokenInfo } from '../../domain/network.ts';
import type { WalletRecord } from '../../domain/records/wallet-records.ts';
import { walletLabel } from '../../domain/wallet-label.ts';
import type { Store } from '../../store/store.ts';
import type { SecretBox } from '../custody/secret-box.ts';
import { type IssuedChallenge, WalletChallenges } from './wallet-challenges.ts';

export interface WalletView {
  readonly address: string;
  readonly chain: ChainFamily;
  readonly network: string | null;
  readonly watchOnly: boolean;
  readonly createdAt: number;
  /** The account's name for the wallet; null: none. */
  readonly label: string | null;
}

export interface WalletWithBalance extends WalletView {
  /** Native currency of the family's default network; null when the chain could not be asked. */
  readonly balance: number | null;
  readonly currency: string | null;
  /**
   * Every token the wallet holds on that network (Solana: its SPL Token and Token-2022 accounts, summed
   * per mint; EVM: the network's listed ERC-20 tokens), by address; null when the chain could not be asked.
   */
  readonly tokens: WalletTokenBalance[] | null;
}

/** A token balance of a wallet, in whole units of the token. */
export interface WalletTokenBalance {
  /** As GET /networks lists it (the network's or the operator's); null for a token neither lists. */
  readonly symbol: string | null;
  /** The mint (Solana) or contract (EVM). */
  readonly address: string;
  readonly decimals: number;
  readonly balance: number;
  /** Atomic units, decimal text: exact where `balance` is a float. */
  readonly amount: string;
}

/** A custodial wallet opened for signing: lives only as long as one payment needs it. */
export interface WalletSigner {
  readonly wallet: WalletRecord;
  readonly secretKey: Uint8Array;
}

/** How many wallets `find` keeps in memory. */
const REGISTERED_WALLETS_KEPT = 10_000;

/** Custodial wallets (the gateway holds the key) and watch-only addresses (receive only). */
export class WalletService {
  /** Wallets found by address, keyed by family and canonical address (see `find`). */
  private readonly registered = new Map<string, WalletRecord>();

  constructor(
    private readonly store: Store,
    private readonly networks: NetworkRegistry,
    private readonly secrets: SecretBox,
    private readonly now: () => number = Date.now,
  ) {
    this.challenges = new WalletChallenges(store, now);
  }

  private readonly challenges: WalletChallenges;

  async create(
    accountId: string,
    input: { chain: string; network?: string | undefined; label?: string | null | undefined },
  ): Promise<WalletView> {
    const family = validFamily(input.chain);
    const label = walletLabel(input.label) ?? null;
    const generate = KEYPAIR_GENERATORS[family];
    if (generate === undefined)
      throw invalidParameters({ chain: `custodial ${family} wallets are not supported yet` });
    const network = this.networkFor(family, input.network);
    const keypair = generate();
    const wallet: WalletRecord = {
      id: newId('wal'),
      accountId,
      family,
      network,
      address: keypair.address,
      watchOnly: false,
      encryptedSecret: this.secrets.seal(keypair.secretKey, sealContext(family, keypair.address)),
      createdAt: this.now(),
      label,
    };
    keypair.secretKey.fill(0);
    if (!(await this.store.wallets.insert(wallet)))
      throw new Error('a freshly generated address already exists');
    return view(wallet);
  }

  /**
   * A challenge to sign with `address`'s key, for this account: the first step of registering a
   * watch-only wallet. An address already registered (by this account or any other) is refused here,
   * with the same answer whoever holds it.
   */
  async challenge(accountId: string, input: { chain: string; address: string }): Promise<IssuedChallenge> {
    const { family, address } = watchable(input);
    if ((await this.store.wallets.findByAddress(family, address)) !== undefined) throw unavailable();
    return this.challenges.issue(accountId, family, address);
  }

  /**
   * Registers an address the account controls elsewhere, as watch-only: it can receive, never send.
   * Proof of control is required: `signature` by the address's key over `challenge`, a challenge issued
   * to this account for this address (see WalletChallenges). The challenge is used up in the same
   * transaction that inserts the wallet: both or neither.
   */
  async watch(
    accountId: string,
    input: {
      chain: string;
      address: string;
      network?: string | undefined;
      challenge: string;
      signature: string;
      label?: string | null | undefined;
    },
  ): Promise<WalletView> {
    const { family, address } = watchable(input);
    const label = walletLabel(input.label) ?? null;
    const network = this.networkFor(family, input.network);
    const challenge = await this.challenges.check(
      accountId,
      family,
      address,
      input.challenge,
      input.signature,
    );
    const now = this.now();
    const wallet: WalletRecord = {
      id: newId('wal'),
      accountId,
      family,
      network,
      address,
      watchOnly: true,
      encryptedSecret: null,
      createdAt: now,
      label,
    };
    await this.store.transaction(async (tx) => {
      if (!(await tx.walletChallenges.markUsed(challenge.nonce, now))) {
        throw new GatewayError('CHALLENGE_ALREADY_USED', {
          details: { challenge: 'was already answered; ask for a new one' },
        });
      }
      // Thrown inside the transaction, so the challenge stays unused when the address is taken.
      if (!(await tx.wallets.insert(wallet))) throw unavailable();
    });
    return view(wallet);
  }

  async list(accountId: string): Promise<WalletWithBalance[]> {
    const wallets = await this.store.wallets.listByAccount(accountId);
    return Promise.all(
      wallets.map(async (wallet) => {
        const chain = this.chainFor(wallet);
        if (chain === undefined) return { ...view(wallet), balance: null, currency: null, tokens: null };
        const decimals = chain.info.nativeCurrency.decimals;
        const [balance, tokens] = await Promise.all([
          chain.getBalance(wallet.address).then(
            (atomic) => toWholeUnits(atomic, decimals),
            () => null,
          ),
          chain.getTokenAccounts(wallet.address, this.networks.tokensOf(chain.info.id)).then(
            (holdings) => tokenBalances(holdings, this.networks.tokensOf(chain.info.id)),
            () => null,
          ),
        ]);
        return { ...view(wallet), balance, currency: chain.info.nativeCurrency.symbol, tokens };
      }),
    );
  }

  /**
   * Sets the label of the caller's wallet at `address` (custodial or watch-only); null, or a text empty
   * once trimmed, clears it. Another account's wallet is 404 WALLET_NOT_FOUND, exactly as an address
   * no account has: its label is never set, and whether it exists is not told.
   */
  async setLabel(accountId: string, address: string, input: string | null): Promise<WalletView> {
    const family = addressFamily(address);
    if (family === undefined) {
      throw invalidParameters({ address: 'must be a Solana (base58) or EVM (0x…) address' });
    }
    const label = walletLabel(input) ?? null;
    const wallet = await this.store.wallets.setLabel(accountId, family, canonicalAddress(address), label);
    if (wallet === undefined) {
      throw new GatewayError('WALLET_NOT_FOUND', {
        message: `No wallet ${address} in this account.`,
        details: { address: 'is not a wallet of this account' },
      });
    }
    return view(wallet);
  }

  /** The caller's wallet at `address` (custodial or watch-only); 403 for anyone else's or nobody's. */
  async owned(accountId: string, address: string, field = 'walletAddress'): Promise<WalletRecord> {
    const family = addressFamily(address);
    const wallet = family === undefined ? undefined : await this.find(family, canonicalAddress(address));
    if (wallet === undefined || wallet.accountId !== accountId) {
      throw new GatewayError('FORBIDDEN', {
        message: 'This wallet is not one of your wallets.',
        details: { [field]: 'is not a wallet of this account' },
      });
    }
    return wallet;
  }

  /** Opens the caller's custodial wallet for signing; 403 for a watch-only or foreign wallet. */
  async signer(accountId: string, address: string): Promise<WalletSigner> {
    const wallet = await this.owned(accountId, address);
    if (wallet.watchOnly || wallet.encryptedSecret === null) {
      throw new GatewayError('FORBIDDEN', {
        message: 'This wallet is watch-only: the gateway holds no key for it.',
        details: { walletAddress: 'is watch-only' },
      });
    }
    return {
      wallet,
      secretKey: this.secrets.open(wallet.encryptedSecret, sealContext(wallet.family, wallet.address)),
    };
  }

  /**
   * The wallet registered at this address, whichever account has it. Found wallets are kept: a wallet is
   * never removed, and nothing but its label changes once registered (WalletRepository has no way to), so
   * what was read is still what storage holds, on every instance, except the label: a kept record's
   * `label` may be old and is never read (`list` and `setLabel` read storage). An address not found is read again next time, as another
   * instance may register it at any moment. Every send and receive asks first.
   */
  private async find(family: ChainFamily, address: string): Promise<WalletRecord | undefined> {
    const key = `${family}:${address}`;
    const known = this.registered.get(key);
    if (known !== undefined) return known;
    const wallet = await this.store.wallets.findByAddress(family, address);
    if (wallet !== undefined) {
      // Bounded; dropping the oldest only costs a read.
      if (this.registered.size >= REGISTERED_WALLETS_KEPT)
        this.registered.delete(this.registered.keys().next().value ?? '');
      this.registered.set(key, wallet);
    }
    return wallet;
  }

  private chainFor(wallet: WalletRecord) {
    try {
      return this.networks.resolve({ address: wallet.address, network: wallet.network ?? undefined });
    } catch {
      return undefined;
    }
  }

  private networkFor(family: ChainFamily, requested: string | undefined): string | null {
    const match = this.networks
      .list()
      .find((n) => (requested === undefined ? n.family === family && n.isDefault : n.id === requested));
    if (requested !== undefined && (match === undefined || match.family !== family)) {
      throw invalidParameters({ network: `is not a configured ${family} network; see GET /networks` });
    }
    return match?.id ?? null;
  }
}

/** Holdings summed per token, listed tokens first (by symbol), then the others by address. */
function tokenBalances(
  holdings: readonly ChainTokenAccount[],
  listed: readonly TokenInfo[],
): WalletTokenBalance[] {
  const byToken = new Map<string, { decimals: number; amount: bigint }>();
  for (const h of holdings) {
    const address = canonicalAddress(h.mint);
    const held = byToken.get(address);
    byToken.set(address, { decimals: h.decimals, amount: (held?.amount ?? 0n) + h.amount });
  }
  const symbols = new Map(listed.map((t) => [canonicalAddress(t.address), t.symbol]));
  return [...byToken]
    .map(([address, { decimals, amount }]) => ({
      symbol: symbols.get(address) ?? null,
      address,
      decimals,
      balance: toWholeUnits(amount, decimals),
      amount: amount.toString(),
    }))
    .sort((a, b) =>
      a.symbol !== null && b.symbol !== null
        ? a.symbol.localeCompare(b.symbol)
        : a.symbol !== null
          ? -1
          : b.symbol !== null
            ? 1
            : a.address < b.address
              ? -1
              : 1,
    );
}

function view(wallet: WalletRecord): WalletView {
  return {
    address: wallet.address,
    chain: wallet.family,
    network: wallet.network,
    watchOnly: wallet.watchOnly,
    createdAt: wallet.createdAt,
    label: wallet.label,
  };
}

/** The family and canonical spelling of an address to watch, checked against the `chain` named. */
function watchable(input: { chain: string; address: string }): { family: ChainFamily; address: string } {
  const family = validFamily(input.chain);
  if (addressFamily(input.address) !== family)
    throw invalidParameters({ address: `must be ${chainFamily(family).addressName}` });
  return { family, address: canonicalAddress(input.address) };
}

/**
 * One answer for an address that cannot be registered, whoever holds it: it never tells which account
 * has it, nor whether it is the caller's own.
 */
function unavailable(): GatewayError {
  return new GatewayError('WALLET_ALREADY_REGISTERED', {
    details: { address: 'is already registered and cannot be registered again' },
  });
}

function validFamily(chain: string): ChainFamily {
  if (!(CHAIN_FAMILIES as readonly string[]).includes(chain)) {
    throw invalidParameters({ chain: `must be one of ${CHAIN_FAMILIES.join(', ')}` });
  }
  return chain as ChainFamily;
}

/** The sealed secret is bound to its wallet (see SecretBox). */
function sealContext(family: ChainFamily, address: string): string {
  return `wallet:${family}:${address}`;
}
