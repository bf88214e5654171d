import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  getAddress,
  type Hex,
  http,
  parseAbi,
} from 'viem';
import { uptoPermitOf } from '../../../src/chains/evm/upto-evm-scheme.ts';
import { uptoSettleCall } from '../../../src/chains/evm/upto-permit2-proxy.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const TOKEN_ABI = parseAbi(['function balanceOf(address) view returns (uint256)']);
const MAX = 50_000n;
const USED = 30_000n;
const RESOURCE = 'https://shop.example/metered';

/** Runtime code of a contract forwarding its whole calldata to `target` (CALL, reverting on failure). */
function forwarderCode(target: Address): Hex {
  return `0x365f5f375f5f365f5f73${target.slice(2).toLowerCase()}5af16026575f5ffd5b00`;
}

/**
 * Review (session 17) of POST /payment/x402 paying x402 `upto` on EVM (68572d0): the seller names the
 * facilitator (extra.facilitatorAddress) — any address, a contract of its own included. The upto proxy
 * lets that facilitator settle, so a seller whose "facilitator" is a forwarding contract takes the money
 * in a transaction whose top-level call is not the proxy's settle. findSettlement only recognises a
 * transaction sent TO the proxy, so the gateway never finds the settlement and expires the payment
 * ("nothing was paid") though the chain moved the tokens; the spend policies' hold is released with it.
 */
describe('review-session17: custodial upto settled through a seller-chosen facilitator contract', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let offsetMs = 0;
  let usdc: Address;
  let network: string;
  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const balance = (a: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [a] });

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id;
    usdc = evm.usdc.address as Address;
    gw = await startTestGateway({
      storage: tempSqlite(),
      masterKey: new Uint8Array(randomBytes(32)),
      networks: new NetworkRegistry([evm.adapter]),
      now: () => Date.now() + offsetMs,
    });
    await gw.services.facilitator.start();
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('a settlement through a forwarding facilitator contract is confirmed at the settled amount, not expired', async () => {
    const [seller, buyer] = await Promise.all(
      [0, 1].map(async () => {
        const caller = await gw.newCaller('premium');
        const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body
          .address as Address;
        return { ...caller, wallet };
      }),
    );
    for (const body of [
      { address: buyer?.wallet, amount: 1, token: 'USDC' },
      { address: buyer?.wallet, amount: 1 },
    ]) {
      const funded = await callAs(gw, seller?.key ?? '', 'POST', '/faucet', body);
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    assert.ok(seller !== undefined && buyer !== undefined);

    // The hostile seller's "facilitator": a contract forwarding its calldata to the upto proxy.
    const facilitator = getAddress('0x00000000000000000000000000000000deadf00d');
    const { UPTO_PERMIT2_PROXY_ADDRESS } = await import('../../../src/chains/evm/upto-permit2-proxy.ts');
    await chainClient().request({
      method: 'anvil_setCode' as never,
      params: [facilitator, forwarderCode(UPTO_PERMIT2_PROXY_ADDRESS)] as never,
    });

    const paymentRequired = Buffer.from(
      JSON.stringify({
        x402Version: 2,
        resource: { url: RESOURCE, description: 'metered', mimeType: 'application/json' },
        accepts: [
          {
            scheme: 'upto',
            network,
            asset: usdc,
            amount: MAX.toString(),
            payTo: seller.wallet,
            maxTimeoutSeconds: 120,
            extra: {
              name: 'USD Coin',
              version: '2',
              assetTransferMethod: 'permit2',
              facilitatorAddress: facilitator,
            },
          },
        ],
      }),
    ).toString('base64');
    const paid = await callAs(gw, buyer.key, 'POST', '/payment/x402', {
      walletAddress: buyer.wallet,
      paymentRequired,
      resource: RESOURCE,
      maxAmount: { USDC: 1 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.deepEqual([paid.body.status, paid.body.amount], ['pending', 0.05]);

    // The seller settles 0.03 USDC through its contract (the proxy's own check passes: msg.sender is it).
    const payload = decodePaymentSignatureHeader(paid.body.paymentHeader).payload as Record<string, unknown>;
    const permit = uptoPermitOf(payload);
    assert.ok(permit !== undefined);
    const before = await balance(seller.wallet);
    const operator = createWalletClient({
      account: evm.operator as Address,
      transport: http(evm.anvil.rpcUrl),
    });
    const hash = await operator.sendTransaction({
      to: facilitator,
      data: uptoSettleCall(permit, USED).data,
      chain: null,
    });
    const receipt = await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 });
    assert.equal(receipt.status, 'success');
    assert.equal((await balance(seller.wallet)) - before, USED, 'the seller was paid 0.03 USDC');

    // The buyer asks the gateway to look now, and again once the permit's deadline is long past.
    await callAs(gw, buyer.key, 'POST', `/payment/x402/${paid.body.paymentId}/check`);
    offsetMs = 30 * 60_000;
    const checked = await callAs(gw, buyer.key, 'POST', `/payment/x402/${paid.body.paymentId}/check`);
    assert.equal(checked.status, 200, JSON.stringify(checked.body));
    const record = await gw.store.payments.get(paid.body.paymentId);
    assert.deepEqual(
      [record?.status, record?.amount],
      ['confirmed', USED],
      `the chain moved ${USED} to the seller; the gateway recorded ${record?.status} ${record?.amount}`,
    );
  });

  it('an x402 v1 exact option saying assetTransferMethod permit2 sends no Permit2 approval (the v1 client signs EIP-3009)', async () => {
    offsetMs = 0;
    const caller = await gw.newCaller('premium');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body
      .address as Address;
    for (const body of [
      { address: wallet, amount: 1, token: 'USDC' },
      { address: wallet, amount: 1 },
    ]) {
      assert.equal((await callAs(gw, caller.key, 'POST', '/faucet', body)).status, 200);
    }
    const other = await gw.newCaller('premium');
    const payTo = (await callAs(gw, other.key, 'POST', '/wallets', { chain: 'evm' })).body.address;
    const paid = await callAs(gw, caller.key, 'POST', '/payment/x402', {
      walletAddress: wallet,
      paymentRequiredBody: {
        x402Version: 1,
        accepts: [
          {
            scheme: 'exact',
            network,
            maxAmountRequired: '20000',
            resource: RESOURCE,
            description: 'v1',
            mimeType: 'application/json',
            payTo,
            maxTimeoutSeconds: 60,
            asset: usdc,
            extra: { assetTransferMethod: 'permit2', name: 'USD Coin', version: '2' },
          },
        ],
      },
      resource: RESOURCE,
      maxAmount: { USDC: 1 },
    });
    const sent = await chainClient().getTransactionCount({ address: wallet });
    const header = typeof paid.body.paymentHeader === 'string' ? paid.body.paymentHeader : '';
    const signed =
      header === ''
        ? 'nothing'
        : Object.keys(JSON.parse(Buffer.from(header, 'base64').toString()).payload).join(',');
    assert.equal(
      sent,
      0,
      `answer ${paid.status}, payload signed: ${signed}; the wallet sent ${sent} transaction(s)`,
    );
    assert.match(JSON.stringify(paid.body), /permit2 is x402 v2 only/, 'refused, saying why');
  });
});
