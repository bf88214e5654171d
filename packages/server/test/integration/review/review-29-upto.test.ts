import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { createPermit2ApprovalTx } from '@x402/evm';
import { UptoEvmScheme as UptoBuyerScheme } from '@x402/evm/upto/client';
import { declareDiscoveryExtension } from '@x402/extensions/bazaar';
import { type Address, createPublicClient, createWalletClient, getAddress, http } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { stockPayload } from '../../support/x402-buyer.ts';

const MAX = 50_000n;

/**
 * Review of #29 (adversarial): x402 upto on the embedded anvil, as a hostile account would use it.
 */
describe('review-29: x402 upto as a hostile account', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let seller: { key: string; accountId: string; evm: Address };
  let network: `eip155:${string}`;
  let usdc: Address;
  let facilitatorAddress: Address;

  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);

  /** A buyer with ETH for gas and 1 USDC who approved Permit2 once. */
  const newBuyer = async (): Promise<PrivateKeyAccount> => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    for (const body of [
      { address: buyer.address, amount: 1 },
      { address: buyer.address, amount: 1, token: 'USDC' },
    ]) {
      const funded = await api(seller.key, 'POST', '/faucet', body);
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    const wallet = createWalletClient({ account: buyer, transport: http(evm.anvil.rpcUrl) });
    const hash = await wallet.sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null });
    assert.equal(
      (await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 })).status,
      'success',
    );
    return buyer;
  };

  const requirementsFor = (): PaymentRequirements => ({
    scheme: 'upto',
    network,
    asset: usdc,
    amount: MAX.toString(),
    payTo: seller.evm,
    maxTimeoutSeconds: 120,
    extra: { name: 'USD Coin', version: '2', assetTransferMethod: 'permit2', facilitatorAddress },
  });

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    gw = await startTestGateway({ networks: new NetworkRegistry([evm.adapter]) });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      evm: (await api(caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
    facilitatorAddress = getAddress(gw.services.facilitator.supported().signers['eip155:*']?.[0] ?? '0x');
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('an upto settle of 0 (nothing moved, no chain, no fee) does not catalogue a bazaar listing', async () => {
    const buyer = await newBuyer();
    const payload: PaymentPayload = await stockPayload(new UptoBuyerScheme(buyer), requirementsFor());
    const bazaar = declareDiscoveryExtension({ input: { q: 'x' }, output: { example: { ok: true } } })
      .bazaar as { info: { input: Record<string, unknown> } };
    bazaar.info.input.method = 'GET';
    const url = 'https://free-listing.example/spam';
    const settled = await api(seller.key, 'POST', '/facilitator/settle', {
      x402Version: 2,
      paymentPayload: {
        ...payload,
        resource: { url, description: 'listed for nothing' },
        extensions: { bazaar },
      },
      paymentRequirements: { ...payload.accepted, amount: '0' },
    });
    assert.equal(settled.body.success, true, JSON.stringify(settled.body));
    assert.equal(settled.body.amount, '0');
    const listed = await api(seller.key, 'GET', '/facilitator/discovery/resources?limit=100');
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    const items = (listed.body.items as { resource: string }[]).filter((i) => i.resource === url);
    assert.equal(items.length, 0, 'a payment of nothing is catalogued');
  });
});
