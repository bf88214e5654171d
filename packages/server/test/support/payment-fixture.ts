import type { LightMyRequestResponse } from 'fastify';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { bearer, startTestGateway, type TestGateway, type TestGatewayOptions } from './test-gateway.ts';
import { startTestChain, type TestChain } from './test-localnet.ts';

export const LAMPORTS = 1_000_000_000n;

export interface Party {
  readonly accountId: string;
  readonly key: string;
  readonly wallet: string;
}

export interface PaymentFixture {
  readonly chain: TestChain;
  readonly gw: TestGateway;
  /** A caller with a custodial Solana wallet funded with `sol` SOL. */
  party(sol?: number, plan?: 'standard' | 'premium'): Promise<Party>;
  post(
    key: string,
    url: string,
    payload: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  get(key: string, url: string): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** A gateway on a real localnet, with helpers to make funded callers and call the API as they would. */
export async function startPaymentFixture(
  options: { chain?: Parameters<typeof startTestChain>[0]; gateway?: TestGatewayOptions } = {},
): Promise<PaymentFixture> {
  const chain = await startTestChain(options.chain);
  const gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]), ...options.gateway });
  const post = (key: string, url: string, payload: unknown, headers: Record<string, string> = {}) =>
    gw.app
      .inject({ method: 'POST', url, headers: { ...bearer(key), ...headers }, payload: payload as object })
      .then((r) => r);
  const get = (key: string, url: string) =>
    gw.app.inject({ method: 'GET', url, headers: bearer(key) }).then((r) => r);
  return {
    chain,
    gw,
    post,
    get,
    party: async (sol = 0, plan = 'standard') => {
      const caller = await gw.newCaller(plan);
      const created = await post(caller.key, '/wallets', { chain: 'solana' });
      if (created.statusCode !== 200) throw new Error(`wallet creation failed: ${created.body}`);
      const wallet = created.json().address as string;
      if (sol > 0) await chain.adapter.faucet?.fundNative(wallet, BigInt(Math.round(sol * 1e9)));
      return { ...caller, wallet };
    },
    close: async () => {
      await gw.close();
      await chain.close();
    },
  };
}
