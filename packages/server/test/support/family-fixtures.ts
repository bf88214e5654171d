import type { ApiCaller } from './api-caller.ts';
import { type ChainFamily, evmFamily, solanaFamily } from './chain-family.ts';
import type { EvmPaymentFixture } from './evm-payment-fixture.ts';
import { newParty, type Party } from './party.ts';
import type { PaymentFixture } from './payment-fixture.ts';
import type { TestGateway } from './test-gateway.ts';

/**
 * What a payment test that runs on both chain families needs of its fixture: the gateway, its one
 * network, the chain's money reads and funded callers, with every amount in atomic units (lamports,
 * wei). payment-fixture.ts and evm-payment-fixture.ts each give one through `onSolana` / `onEvm`, so a
 * suite written against this runs unchanged on either.
 */
export interface FamilyPaymentFixture extends ApiCaller {
  readonly gw: TestGateway;
  /** Fresh addresses, balances and fees on the gateway's chain. */
  readonly family: ChainFamily;
  /** The CAIP-2 id of the gateway's one network. */
  readonly network: string;
  readonly native: { readonly symbol: string; readonly decimals: number };
  /** A caller (Standard plan unless asked) with a custodial wallet funded with `amount` atomic units. */
  party(amount?: bigint, plan?: 'standard' | 'premium'): Promise<Party>;
}

export function onSolana(f: PaymentFixture): FamilyPaymentFixture {
  const { adapter, localnet } = f.chain;
  return {
    get: f.get,
    post: f.post,
    gw: f.gw,
    family: solanaFamily(localnet, adapter),
    network: adapter.info.id,
    native: adapter.info.nativeCurrency,
    party: (amount = 0n, plan = 'standard') =>
      newParty(f.gw, 'solana', {
        plan,
        ...(amount > 0n ? { fund: (wallet) => adapter.faucet?.fundNative(wallet, amount) } : {}),
      }),
  };
}

export function onEvm(f: EvmPaymentFixture): FamilyPaymentFixture {
  return {
    get: f.get,
    post: f.post,
    gw: f.gw,
    family: evmFamily(f.evm.anvil.rpcUrl),
    network: f.chain.info.id,
    native: f.chain.info.nativeCurrency,
    party: (amount = 0n, plan = 'standard') => f.party(amount, plan),
  };
}
