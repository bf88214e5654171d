import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { type ApiCaller, callerOf } from './api-caller.ts';
import { newParty, type Party } from './party.ts';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from './test-gateway.ts';
import { startTestChain, type TestChain } from './test-localnet.ts';

export type { Party } from './party.ts';

export const LAMPORTS = 1_000_000_000n;

/** The Solana payment fixture; evm-payment-fixture.ts is its EVM twin (both share api-caller and party). */
export interface PaymentFixture extends ApiCaller {
  readonly chain: TestChain;
  readonly gw: TestGateway;
  /** A caller with a custodial Solana wallet funded with `sol` SOL. */
  party(sol?: number, plan?: 'standard' | 'premium'): Promise<Party>;
  close(): Promise<void>;
}

/** A gateway on a real localnet, with helpers to make funded callers and call the API as they would. */
export async function startPaymentFixture(
  options: { chain?: Parameters<typeof startTestChain>[0]; gateway?: TestGatewayOptions } = {},
): Promise<PaymentFixture> {
  const chain = await startTestChain(options.chain);
  const gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]), ...options.gateway });
  return {
    ...callerOf(gw),
    chain,
    gw,
    party: (sol = 0, plan = 'standard') =>
      newParty(gw, 'solana', {
        plan,
        ...(sol > 0
          ? { fund: (wallet) => chain.adapter.faucet?.fundNative(wallet, BigInt(Math.round(sol * 1e9))) }
          : {}),
      }),
    close: async () => {
      await gw.close();
      await chain.close();
    },
  };
}
