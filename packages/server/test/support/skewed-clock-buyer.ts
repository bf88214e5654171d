import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import { type Address, createPublicClient, http, parseAbi } from 'viem';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { callAs } from './api-caller.ts';
import { DATABASE_URL, tempPostgres, tempSqlite } from './databases.ts';
import { startTestEvm, type TestEvm } from './test-anvil.ts';
import { startTestGateway, type TestGateway } from './test-gateway.ts';

const BALANCE_ABI = parseAbi(['function balanceOf(address) view returns (uint256)']);
export const SKEWED_RESOURCE = 'https://shop.example/paid';

/**
 * The custodial x402 buyer (POST /payment/x402) on the embedded anvil, with the gateway's clock movable
 * ahead of the chain's — a node that lags, or a chain whose blocks stalled — so a test can tell what the
 * gateway decides on its own clock from what it decides on the chain's. SQLite, or PostgreSQL when
 * DATABASE_URL is set.
 */
export interface SkewedClockBuyer {
  readonly evm: TestEvm;
  readonly gw: TestGateway;
  readonly usdc: Address;
  readonly network: string;
  /** An account with a custodial wallet to be paid, and whose key the faucet is asked with. */
  readonly seller: { key: string; wallet: Address };
  /** Puts the gateway's clock `ms` ahead of the chain's (0: back in step). */
  skew(ms: number): void;
  chainClient(): ReturnType<typeof createPublicClient>;
  /** The USDC balance of `owner`, atomic units. */
  balance(owner: Address): Promise<bigint>;
  /** Pays `accept` through POST /payment/x402 from a new custodial wallet funded with 1 USDC and 1 ETH. */
  payFromNewWallet(accept: Record<string, unknown>): Promise<{
    key: string;
    wallet: Address;
    paymentId: string;
    payload: Record<string, unknown>;
  }>;
  close(): Promise<void>;
}

export async function startSkewedClockBuyer(): Promise<SkewedClockBuyer> {
  let offsetMs = 0;
  const evm = await startTestEvm();
  const usdc = evm.usdc.address as Address;
  const gw = await startTestGateway({
    storage: DATABASE_URL === undefined ? tempSqlite() : await tempPostgres(),
    masterKey: new Uint8Array(randomBytes(32)),
    networks: new NetworkRegistry([evm.adapter]),
    now: () => Date.now() + offsetMs,
  });
  await gw.services.facilitator.start();
  const caller = await gw.newCaller('premium');
  const seller = {
    key: caller.key,
    wallet: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address as Address,
  };
  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  return {
    evm,
    gw,
    usdc,
    network: evm.adapter.info.id,
    seller,
    skew: (ms) => {
      offsetMs = ms;
    },
    chainClient,
    balance: (owner) =>
      chainClient().readContract({
        address: usdc,
        abi: BALANCE_ABI,
        functionName: 'balanceOf',
        args: [owner],
      }),
    payFromNewWallet: async (accept) => {
      const buyer = await gw.newCaller('premium');
      const wallet = (await callAs(gw, buyer.key, 'POST', '/wallets', { chain: 'evm' })).body
        .address as Address;
      for (const body of [
        { address: wallet, amount: 1, token: 'USDC' },
        { address: wallet, amount: 1 },
      ]) {
        const funded = await callAs(gw, seller.key, 'POST', '/faucet', body);
        assert.equal(funded.status, 200, JSON.stringify(funded.body));
      }
      const paymentRequired = Buffer.from(
        JSON.stringify({
          x402Version: 2,
          resource: { url: SKEWED_RESOURCE, description: 'paid', mimeType: 'application/json' },
          accepts: [accept],
        }),
      ).toString('base64');
      const paid = await callAs(gw, buyer.key, 'POST', '/payment/x402', {
        walletAddress: wallet,
        paymentRequired,
        resource: SKEWED_RESOURCE,
        maxAmount: { USDC: 1 },
      });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      const payload = decodePaymentSignatureHeader(paid.body.paymentHeader).payload as Record<
        string,
        unknown
      >;
      return { key: buyer.key, wallet, paymentId: paid.body.paymentId as string, payload };
    },
    close: async () => {
      // The test gateway disposes of the storage it was given.
      await gw.close();
      await evm.close();
      evm.dispose();
    },
  };
}
