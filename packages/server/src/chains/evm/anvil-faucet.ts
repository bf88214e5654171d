import { USDC_LIKE_ABI } from '@gate402/anvil';
import { type Address, encodeFunctionData, type Hex } from 'viem';
import type { LocalFaucet } from '../chain-adapter.ts';
import { ChainError } from '../chain-error.ts';
import type { AnvilClient } from './anvil-client.ts';
import type { ChainDurability } from './chain-durability.ts';
import { toChainError } from './evm-errors.ts';

/** The faucet tops its own account up to this when it runs low (anvil_setBalance), in wei. */
const FAUCET_FLOAT = 1_000_000n * 10n ** 18n;

/**
 * Funds addresses on anvil with real transactions, so every faucet answer has a hash to look up:
 * ETH is sent from one of anvil's unlocked dev accounts (which anvil signs for, so no key lives here),
 * USDC is minted by that account as the token's owner. Requests run one at a time: each waits for its
 * receipt, so nonces never collide and a balance read after the answer sees the money.
 */
export class AnvilFaucet implements LocalFaucet {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly client: AnvilClient,
    private readonly devAccount: Address,
    private readonly tokens: Readonly<Record<string, Address>>,
    /** The embedded anvil's journal: a funding is answered once its block is in it (chain-durability.ts). */
    private readonly durability?: ChainDurability | undefined,
  ) {}

  fundNative(address: string, amount: bigint): Promise<string> {
    return this.serially(async () => {
      const float = await this.client.getBalance({ address: this.devAccount });
      if (float < amount + 10n ** 18n) {
        await this.client.setBalance({ address: this.devAccount, value: FAUCET_FLOAT + amount });
      }
      return this.send({ to: address as Address, value: amount });
    });
  }

  fundToken(symbol: string, owner: string, amount: bigint): Promise<string> {
    const token = this.tokens[symbol];
    if (token === undefined) {
      return Promise.reject(new ChainError('rejected', `no token ${symbol} on this network`));
    }
    const data = encodeFunctionData({
      abi: USDC_LIKE_ABI,
      functionName: 'mint',
      args: [owner as Address, amount],
    });
    return this.serially(() => this.send({ to: token, data }));
  }

  private async send(tx: { to: Address; value?: bigint; data?: Hex }): Promise<string> {
    const hash = await this.client.sendTransaction({
      account: this.devAccount,
      chain: null,
      to: tx.to,
      ...(tx.value === undefined ? {} : { value: tx.value }),
      ...(tx.data === undefined ? {} : { data: tx.data }),
    });
    const receipt = await this.client.waitForTransactionReceipt({
      hash,
      pollingInterval: 50,
      timeout: 30_000,
    });
    if (receipt.status !== 'success') throw new ChainError('rejected', `faucet transaction ${hash} reverted`);
    if (
      this.durability !== undefined &&
      !(await this.durability.syncThrough(receipt.blockNumber, receipt.blockHash))
    )
      throw new ChainError('unavailable', `faucet transaction ${hash} was rewound before it was journaled`);
    return hash;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work).catch((error: unknown) => {
      throw toChainError(error);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}
