import assert from 'node:assert/strict';
import type { Localnet } from '@gate402/localnet';
import { createTestClient, type Hex, http, publicActions } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';
import { generateSolanaKeypair } from '../../src/chains/solana/solana-keypair.ts';
import { waitFor } from './crash-harness.ts';

/**
 * What a test that runs on both chain families needs of its chain, so the Solana and the EVM version
 * of one test share their set-up and their money checks: fresh addresses, funding, balances and the
 * fee a landed transaction cost, all in atomic units (lamports, wei).
 */
export interface ChainFamily {
  readonly chain: 'solana' | 'evm';
  /** Atomic units in one whole unit of the native currency (SOL, ETH). */
  readonly unit: bigint;
  /** An address nobody has used: a recipient whose balance only the test's payments change. */
  newAddress(): string;
  /** Gives the fresh `address` exactly `amount` and resolves once the chain shows it. */
  fund(address: string, amount: bigint): Promise<void>;
  balance(address: string): Promise<bigint>;
  /** What the landed transaction `signature` charged its sender in fees; fails if it did not land. */
  feeOf(signature: string): Promise<bigint>;
}

/** Solana on an outside localnet (`adapter` reads it as the gateway would). */
export function solanaFamily(localnet: Localnet, adapter: SolanaAdapter): ChainFamily {
  return {
    chain: 'solana',
    unit: 1_000_000_000n,
    newAddress: () => generateSolanaKeypair().address,
    fund: async (address, amount) => {
      localnet.airdrop(address, amount);
      await waitFor(async () => (await adapter.getBalance(address)) === amount);
    },
    balance: (address) => adapter.getBalance(address),
    feeOf: async (signature) => {
      const tx = await adapter.getTransaction(signature);
      assert.ok(tx, `landed payment ${signature} is on chain`);
      return tx.fee;
    },
  };
}

/** anvil's own methods (setBalance) and public reads, with no cache between reads. */
export function anvilTestClient(rpcUrl: string) {
  return createTestClient({ mode: 'anvil', transport: http(rpcUrl), cacheTime: 0 }).extend(publicActions);
}

/** EVM on an outside anvil. */
export function evmFamily(rpcUrl: string): ChainFamily {
  const client = anvilTestClient(rpcUrl);
  return {
    chain: 'evm',
    unit: 10n ** 18n,
    newAddress: () => privateKeyToAccount(generatePrivateKey()).address,
    fund: (address, amount) => client.setBalance({ address: address as Hex, value: amount }),
    balance: (address) => client.getBalance({ address: address as Hex }),
    feeOf: async (signature) => {
      const receipt = await client.getTransactionReceipt({ hash: signature as Hex });
      return receipt.gasUsed * receipt.effectiveGasPrice;
    },
  };
}

/**
 * The money checks of a run of sends from `wallet` to a fresh `recipient`: the recipient holds what
 * landed, once, and the sender lost exactly that plus the fees of what landed.
 */
export async function assertPaidOnce(
  family: ChainFamily,
  run: { wallet: string; recipient: string; initial: bigint; paid: bigint; fees: bigint },
): Promise<void> {
  assert.equal(
    await family.balance(run.recipient),
    run.paid,
    'the recipient got each landed payment exactly once',
  );
  assert.equal(
    await family.balance(run.wallet),
    run.initial - run.paid - run.fees,
    'the sender paid amounts and fees, nothing more',
  );
}
