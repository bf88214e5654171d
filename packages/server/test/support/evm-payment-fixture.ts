import { ANVIL_CHAIN_ID } from '@gate402/anvil';
import { createTestClient, http, publicActions } from 'viem';
import { EvmAdapter } from '../../src/chains/evm/evm-adapter.ts';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { PaymentReconciler } from '../../src/workers/payment-reconciler.ts';
import { type ApiCaller, callerOf } from './api-caller.ts';
import { newParty, type Party } from './party.ts';
import { startTestEvm, type TestEvm } from './test-anvil.ts';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from './test-gateway.ts';

export const ETH = 10n ** 18n;

export type EvmParty = Party;

/** The EVM payment fixture; payment-fixture.ts is its Solana twin (both share api-caller and party). */
export interface EvmPaymentFixture extends ApiCaller {
  readonly evm: TestEvm;
  readonly chain: EvmAdapter;
  readonly gw: TestGateway;
  /** anvil's own methods (mining, automine) and public reads. */
  readonly anvil: ReturnType<typeof anvilClient>;
  /** A caller (Standard plan unless asked) with a custodial EVM wallet funded with `eth` wei. */
  party(eth?: bigint, plan?: 'standard' | 'premium'): Promise<EvmParty>;
  /** A reconciler on this gateway's storage that may sign replacements. */
  reconciler(instanceId: string, gw?: TestGateway): PaymentReconciler;
  close(): Promise<void>;
}

function anvilClient(rpcUrl: string) {
  return createTestClient({ mode: 'anvil', transport: http(rpcUrl), cacheTime: 0 }).extend(publicActions);
}

/**
 * A gateway on a real anvil (port 0, own DATA_DIR) whose EVM adapter polls fast and replaces a stuck
 * transaction after `replaceAfterBlocks` blocks.
 */
export async function startEvmPaymentFixture(
  options: { replaceAfterBlocks?: bigint; gateway?: TestGatewayOptions } = {},
): Promise<EvmPaymentFixture> {
  const evm = await startTestEvm();
  const chain = new EvmAdapter({
    info: evm.adapter.info,
    rpcUrl: evm.anvil.rpcUrl,
    chainId: ANVIL_CHAIN_ID,
    faucet: evm.adapter.faucet,
    pollIntervalMs: 20,
    ...(options.replaceAfterBlocks === undefined ? {} : { replaceAfterBlocks: options.replaceAfterBlocks }),
  });
  const gw = await startTestGateway({ networks: new NetworkRegistry([chain]), ...options.gateway });
  return {
    ...callerOf(gw),
    evm,
    chain,
    gw,
    anvil: anvilClient(evm.anvil.rpcUrl),
    party: (eth = 0n, plan = 'standard') =>
      newParty(gw, 'evm', {
        plan,
        ...(eth > 0n ? { fund: (wallet) => chain.faucet?.fundNative(wallet, eth) } : {}),
      }),
    reconciler: (instanceId, on = gw) =>
      new PaymentReconciler({
        store: on.store,
        networks: on.networks,
        ledger: on.services.ledger,
        wallets: on.services.wallets,
        instanceId,
        recheckMs: 0,
      }),
    close: async () => {
      await gw.close();
      await chain.close();
      await evm.close();
      evm.dispose();
    },
  };
}
