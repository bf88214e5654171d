import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { createPermit2ApprovalTx } from '@x402/evm';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import {
  type Address,
  bytesToHex,
  createPublicClient,
  createTestClient,
  createWalletClient,
  decodeFunctionData,
  getAddress,
  http,
  parseAbi,
  parseTransaction,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from '../../../src/chains/evm/permit2-proxy-abi.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import type { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { callAs } from '../../support/api-caller.ts';
import { deployForwarder, forwardedCall } from '../../support/evm-forwarder.ts';
import { type EvmLocalWallet, signAndBroadcastEvm } from '../../support/evm-local-signer.ts';
import { handReconciler, untilNotPending } from '../../support/hand-reconciler.ts';
import { oneReceiptPerPayload } from '../../support/one-receipt-per-payload.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { newWatchedEvmWallet } from '../../support/watched-evm-wallet.ts';

const TOKEN_ABI = parseAbi(['function balanceOf(address) view returns (uint256)']);
const NONCE_BITMAP_ABI = parseAbi([
  'function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)',
]);

/**
 * x402 `exact` with Permit2 in local mode: a stock @x402/evm buyer (who approved Permit2 once) signs a
 * permit for the seller; POST /transaction/receive answers the seller's own call of x402's Permit2
 * proxy's `settle`, which the seller signs and broadcasts with viem, paying the gas.
 */
describe('x402 EVM Permit2 payloads in POST /transaction/receive: the seller calls the proxy’s settle', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let reconciler: PaymentReconciler;
  let seller: { key: string; wallet: EvmLocalWallet };
  let usdc: Address;

  const chainClient = () => createPublicClient({ transport: http(evm.adapter.info.rpcUrl), cacheTime: 0 });
  const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, seller.key, method, url, payload);
  const balanceOf = (owner: string) =>
    chainClient().readContract({
      address: usdc,
      abi: TOKEN_ABI,
      functionName: 'balanceOf',
      args: [owner as Address],
    });
  /** What a stock @x402/evm buyer, holding 1 USDC and having approved Permit2, sends for a permit2 requirement. */
  const payment = async (amount: string, maxTimeoutSeconds = 60) => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    for (const body of [
      { address: buyer.address, amount: 1 },
      { address: buyer.address, amount: 1, token: 'USDC' },
    ]) {
      const funded = await api('POST', '/faucet', body);
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    const wallet = createWalletClient({ account: buyer, transport: http(evm.adapter.info.rpcUrl) });
    const approval = await wallet.sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null });
    await chainClient().waitForTransactionReceipt({ hash: approval, pollingInterval: 20 });
    const network = evm.adapter.info.id as `eip155:${string}`;
    const payload = await x402Client
      .fromConfig({ schemes: [{ network, client: new EvmBuyerScheme(buyer) }], spendControls: false })
      .createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://shop.example/permit2' },
        accepts: [
          {
            scheme: 'exact',
            network,
            asset: usdc,
            amount,
            payTo: seller.wallet.address,
            maxTimeoutSeconds,
            extra: { assetTransferMethod: 'permit2' },
          },
        ],
      });
    const permit = (payload.payload as { permit2Authorization: { nonce: string; deadline: string } })
      .permit2Authorization;
    return {
      buyer: buyer.address,
      header: encodePaymentSignatureHeader(payload),
      nonce: BigInt(permit.nonce),
      deadline: BigInt(permit.deadline),
    };
  };
  const nonceSpent = async (owner: Address, nonce: bigint) => {
    const bitmap = await chainClient().readContract({
      address: PERMIT2_ADDRESS,
      abi: NONCE_BITMAP_ABI,
      functionName: 'nonceBitmap',
      args: [owner, nonce >> 8n],
    });
    return ((bitmap >> (nonce & 0xffn)) & 1n) === 1n;
  };
  const settle = (paymentId: string) =>
    untilNotPending(reconciler, () => api('GET', `/payment/status/${paymentId}`), 50);
  const receivedBy = async (signature: string) =>
    (await api('GET', `/payment/history/${seller.wallet.address}`)).body.payments.filter(
      (p: { signature: string | null }) => p.signature === signature,
    ) as { status: string; paymentId: string }[];

  before(async () => {
    evm = await startTestEvm();
    usdc = evm.usdc.address as Address;
    gw = await startTestGateway({ networks: new NetworkRegistry([evm.adapter]) });
    await gw.services.facilitator.start();
    reconciler = handReconciler(gw, 'x402-permit2-local-worker');
    const caller = await gw.newCaller('standard');
    seller = { key: caller.key, wallet: await newWatchedEvmWallet(gw, evm, caller.key) };
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('answers an unsigned settle from the seller; once the seller broadcasts it the payment is confirmed once', async () => {
    const { buyer, header, nonce, deadline } = await payment('20000');
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.02,
      asset: 'USDC',
    };
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const b = built.body;
    assert.deepEqual(
      [b.status, b.amountReceived, b.sender, b.asset],
      ['pending', 0.02, buyer, { symbol: 'USDC', address: usdc, decimals: 6 }],
    );
    assert.ok(b.expiresAt <= Number(deadline + 1n) * 1000, 'expiresAt is no later than the permit allows');

    const tx = parseTransaction(bytesToHex(Buffer.from(b.transaction, 'base64')));
    assert.equal(tx.type, 'eip1559');
    assert.equal(getAddress(tx.to ?? '0x'), EXACT_PERMIT2_PROXY_ADDRESS);
    assert.equal(tx.value ?? 0n, 0n);
    assert.equal(
      tx.nonce,
      await chainClient().getTransactionCount({ address: seller.wallet.address as Address }),
    );
    const call = decodeFunctionData({ abi: EXACT_PERMIT2_PROXY_ABI, data: tx.data ?? '0x' });
    assert.equal(call.functionName, 'settle');
    const [permit, owner, witness] = call.args;
    assert.deepEqual(
      [permit.permitted.token, permit.permitted.amount, permit.nonce, permit.deadline, owner, witness.to],
      [usdc, 20_000n, nonce, deadline, buyer, seller.wallet.address],
    );

    const [sellerHeld, buyerHeld] = [await balanceOf(seller.wallet.address), await balanceOf(buyer)];
    await reconciler.runOnce();
    assert.equal((await api('GET', `/payment/status/${b.paymentId}`)).body.status, 'pending');
    const hash = await signAndBroadcastEvm(evm.adapter.info.rpcUrl, b.transaction, seller.wallet.privateKey);
    assert.equal(await nonceSpent(buyer as Address, nonce), true);
    const status = await settle(b.paymentId);
    assert.deepEqual(
      [status.status, status.signature, status.amount, status.sender],
      ['confirmed', hash, 0.02, buyer],
    );
    assert.equal((await balanceOf(seller.wallet.address)) - sellerHeld, 20_000n);
    assert.equal(buyerHeld - (await balanceOf(buyer)), 20_000n);

    // Later passes change nothing: one payment, confirmed, for the one transaction.
    await reconciler.runOnce();
    assert.deepEqual(
      (await receivedBy(hash)).map((p) => p.status),
      ['confirmed'],
    );
    const again = await api('POST', '/transaction/receive', body);
    assert.deepEqual([again.status, again.body.error.details.paymentProof], [422, 'already_used']);
    // The facilitator cannot settle the spent permit either.
    const facilitated = await api('POST', '/payment/receive', body);
    assert.equal(facilitated.status, 422);
    assert.equal((await balanceOf(seller.wallet.address)) - sellerHeld, 20_000n);
  });

  it('the same permit again while its receipt is pending, even twice at the same instant, answers that one receipt', async () => {
    const { header } = await payment('15000');
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.015,
      asset: 'USDC',
    };
    // Not counted here: that the permit is recorded once is checked on its transaction, after it lands.
    const { receipt: first } = await oneReceiptPerPayload({
      receive: () => api('POST', '/transaction/receive', body),
      receiptFields: ['paymentId', 'transaction', 'expiresAt', 'lastValidBlockHeight'],
    });
    const held = await balanceOf(seller.wallet.address);
    const hash = await signAndBroadcastEvm(
      evm.adapter.info.rpcUrl,
      first.body.transaction,
      seller.wallet.privateKey,
    );
    assert.equal((await settle(first.body.paymentId)).status, 'confirmed');
    assert.deepEqual(
      (await receivedBy(hash)).map((p) => [p.paymentId, p.status]),
      [[first.body.paymentId, 'confirmed']],
    );
    assert.equal((await balanceOf(seller.wallet.address)) - held, 15_000n);
  });

  it('a receipt whose permit the facilitator settled first fails; the payment is recorded once, by the facilitator', async () => {
    const { header } = await payment('10000');
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const settled = await api('POST', '/payment/receive', body);
    assert.equal(settled.status, 200, JSON.stringify(settled.body));
    const status = await settle(built.body.paymentId);
    assert.deepEqual([status.status, status.signature], ['failed', settled.body.signature]);
    assert.deepEqual((await receivedBy(settled.body.signature)).map((p) => p.status).sort(), [
      'confirmed',
      'failed',
    ]);
  });

  it('refuses a permit whose deadline is too close to settle, before building anything', async () => {
    // @x402/evm signs deadline = now + maxTimeoutSeconds.
    const { header } = await payment('10000', 2);
    const refused = await api('POST', '/transaction/receive', {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    });
    assert.deepEqual(
      [refused.status, refused.body.error.code, refused.body.error.details.paymentProof],
      [422, 'PAYMENT_VERIFICATION_FAILED', 'permit2_deadline_expired'],
    );
  });

  // Late: it moves the chain's clock ahead of the gateway's.
  it('expires a receipt never submitted only once a block passes the permit’s deadline unused', async () => {
    const { buyer, header, nonce } = await payment('10000', 30);
    const built = await api('POST', '/transaction/receive', {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    });
    assert.equal(built.status, 200, JSON.stringify(built.body));
    assert.ok(built.body.expiresAt <= Date.now() + 31_000, 'expiresAt is no later than the deadline');
    await reconciler.runOnce();
    assert.equal((await api('GET', `/payment/status/${built.body.paymentId}`)).body.status, 'pending');
    const anvil = createTestClient({ mode: 'anvil', transport: http(evm.adapter.info.rpcUrl) });
    await anvil.increaseTime({ seconds: 120 });
    await anvil.mine({ blocks: 1 });
    assert.equal((await settle(built.body.paymentId)).status, 'expired');
    assert.equal(await nonceSpent(buyer as Address, nonce), false);
  });

  // After the one above, whose move of the chain's clock this permit's deadline outlasts. Last: it moves
  // the clock past that deadline.
  it('confirms a receipt whose settle the seller sent through a wrapper contract, first looked at past the permit’s deadline', async () => {
    const { buyer, header, nonce, deadline } = await payment('12000', 600);
    const built = await api('POST', '/transaction/receive', {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.012,
      asset: 'USDC',
    });
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const [sellerHeld, buyerHeld] = [await balanceOf(seller.wallet.address), await balanceOf(buyer)];
    // The seller's smart account, say: it passes the answered settle call on from inside its own calldata.
    const settleCall = parseTransaction(bytesToHex(Buffer.from(built.body.transaction, 'base64')));
    assert.equal(getAddress(settleCall.to ?? '0x'), EXACT_PERMIT2_PROXY_ADDRESS);
    const forwarder = await deployForwarder(evm.adapter.info.rpcUrl);
    const carrier = await createWalletClient({
      account: privateKeyToAccount(seller.wallet.privateKey),
      transport: http(evm.adapter.info.rpcUrl),
    }).sendTransaction({
      to: forwarder,
      data: forwardedCall(EXACT_PERMIT2_PROXY_ADDRESS, settleCall.data ?? '0x'),
      chain: null,
    });
    const mined = await chainClient().waitForTransactionReceipt({ hash: carrier, pollingInterval: 20 });
    assert.equal(mined.status, 'success');
    assert.equal(await nonceSpent(buyer as Address, nonce), true);

    const anvil = createTestClient({ mode: 'anvil', transport: http(evm.adapter.info.rpcUrl) });
    const before = await chainClient().getBlock({ blockTag: 'latest' });
    await anvil.increaseTime({ seconds: Number(deadline - before.timestamp) + 60 });
    await anvil.mine({ blocks: 1 });
    assert.ok((await chainClient().getBlock({ blockTag: 'latest' })).timestamp > deadline);
    const status = await settle(built.body.paymentId);
    assert.deepEqual(
      [status.status, status.signature, status.amount, status.sender],
      ['confirmed', carrier, 0.012, buyer],
    );
    assert.deepEqual(
      (await receivedBy(carrier)).map((p) => [p.paymentId, p.status]),
      [[built.body.paymentId, 'confirmed']],
    );
    assert.equal((await balanceOf(seller.wallet.address)) - sellerHeld, 12_000n);
    assert.equal(buyerHeld - (await balanceOf(buyer)), 12_000n);
  });
});
