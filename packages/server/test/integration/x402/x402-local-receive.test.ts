import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  generateKeyPairSigner,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from '@solana/kit';
import { decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { bytesToHex, createTestClient, http, parseTransaction } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import type { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { type EvmLocalWallet, signAndBroadcastEvm } from '../../support/evm-local-signer.ts';
import { handReconciler, untilNotPending } from '../../support/hand-reconciler.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import { oneReceiptPerPayload } from '../../support/one-receipt-per-payload.ts';
import { watchAddress } from '../../support/proof-of-control.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { newWatchedEvmWallet } from '../../support/watched-evm-wallet.ts';
import {
  evmExactRequirements,
  evmPayload,
  newV1SvmBuyer,
  spendNonceOnAnotherAuthorization,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';

const LAMPORTS = 1_000_000_000n;

/**
 * The payment signed in a v2 PAYMENT-SIGNATURE `header` as someone it does not pay may present it for
 * `payTo`: the v2 value with `accepted.payTo` (which the buyer does not sign) rewritten, and a v1
 * X-PAYMENT value of the same signed payload on `v1Network`, which names no payTo at all.
 */
function presentedFor(header: string, payTo: string, v1Network: string): string[] {
  const payload = decodePaymentSignatureHeader(header);
  const v1 = { x402Version: 1, scheme: 'exact', network: v1Network, payload: payload.payload };
  return [
    encodePaymentSignatureHeader({ ...payload, accepted: { ...payload.accepted, payTo } }),
    Buffer.from(JSON.stringify(v1)).toString('base64'),
  ];
}

/**
 * x402 payloads in local transaction mode (POST /transaction/receive): the buyer's `exact` transaction
 * names the seller's own wallet as fee payer; the gateway answers it for the seller to sign and
 * broadcast, and records the payment once, when it lands.
 */
describe('x402 payloads in POST /transaction/receive: the seller signs as fee payer', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let reconciler: PaymentReconciler;
  let seller: { key: string; wallet: string; secretKey: Uint8Array };

  const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, seller.key, method, url, payload);
  const usdcOf = async (owner: string) =>
    (await chain.adapter.getTokenAccounts(owner)).find((a) => a.mint === chain.localnet.usdcMint.address)
      ?.amount ?? 0n;

  /** A stock @x402/svm buyer's v2 PAYMENT-SIGNATURE value paying `amount` atomic USDC, fee payer `feePayer`. */
  const v2Payment = async (feePayer: string, amount = '40000', payTo = seller.wallet) => {
    const buyer = await generateKeyPairSigner();
    await api('POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = svmExactRequirements(chain, { amount, payTo, feePayer });
    const payload = await svmPayload(chain, buyer, requirements, 'https://shop.example/report');
    return { buyer: buyer.address, header: encodePaymentSignatureHeader(payload) };
  };
  const settle = (paymentId: string) =>
    untilNotPending(reconciler, () => api('GET', `/payment/status/${paymentId}`), 100);

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    await gw.services.facilitator.start();
    reconciler = handReconciler(gw, 'x402-local-worker');
    // The seller keeps its key: a watch-only wallet with SOL for fees and a USDC account to be paid into.
    const caller = await gw.newCaller('standard');
    const keys = generateSolanaKeypair();
    seller = { key: caller.key, wallet: keys.address, secretKey: keys.secretKey };
    const watched = await watchAddress(gw, caller.key, keys);
    assert.equal(watched.statusCode, 200, watched.body);
    chain.localnet.airdrop(seller.wallet, LAMPORTS);
    await api('POST', '/faucet', { address: seller.wallet, amount: 0.01, token: 'USDC' });
  });

  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  it('answers the buyer’s transaction for the seller to sign; once broadcast it is recorded once, confirmed', async () => {
    const { buyer, header } = await v2Payment(seller.wallet);
    const body = { walletAddress: seller.wallet, paymentProof: header, expectedAmount: 0.04, asset: 'USDC' };
    const height = await chain.adapter.getBlockHeight();
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const b = built.body;
    assert.deepEqual(
      [b.verified, b.status, b.amountReceived, b.sender, b.asset, b.network],
      [
        true,
        'pending',
        0.04,
        buyer,
        { symbol: 'USDC', address: chain.localnet.usdcMint.address, decimals: 6 },
        chain.adapter.info.id,
      ],
    );
    assert.equal(b.signature, undefined);
    assert.equal(b.reference, undefined);
    assert.ok(b.lastValidBlockHeight >= Number(height) + 150, String(b.lastValidBlockHeight));
    assert.ok(b.expiresAt > Date.now() && b.expiresAt <= Date.now() + 60_000);

    const tx = getTransactionDecoder().decode(Buffer.from(b.transaction, 'base64'));
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    assert.equal(message.staticAccounts[0], seller.wallet, 'the seller is the fee payer');
    assert.equal(tx.signatures[seller.wallet as keyof typeof tx.signatures], null, 'its slot is empty');
    assert.notEqual(tx.signatures[buyer as keyof typeof tx.signatures], null, 'the buyer has signed');

    // Nothing is paid or recorded as received until the seller broadcasts.
    await reconciler.runOnce();
    assert.equal((await api('GET', `/payment/status/${b.paymentId}`)).body.status, 'pending');
    const held = await usdcOf(seller.wallet);
    const signature = await signAndBroadcast(chain.localnet.rpcUrl, b.transaction, seller.secretKey);
    const status = await settle(b.paymentId);
    assert.deepEqual(
      [status.status, status.signature, status.amount, status.sender, status.asset],
      [
        'confirmed',
        signature,
        0.04,
        buyer,
        { symbol: 'USDC', address: chain.localnet.usdcMint.address, decimals: 6 },
      ],
    );
    assert.equal((await usdcOf(seller.wallet)) - held, 40_000n);

    const again = await api('POST', '/transaction/receive', body);
    assert.equal(again.status, 422);
    assert.deepEqual(
      [again.body.error.code, again.body.error.details.paymentProof],
      ['INVALID_PAYMENT_PROOF', 'already_used'],
    );
    const history = await api('GET', `/payment/history/${seller.wallet}`);
    assert.equal(
      history.body.payments.filter((p: { signature: string }) => p.signature === signature).length,
      1,
    );
  });

  it('the same payload again while its receipt is pending, even twice at the same instant, answers that one receipt; it is paid once', async () => {
    const { header } = await v2Payment(seller.wallet, '10000');
    const body = { walletAddress: seller.wallet, paymentProof: header, expectedAmount: 0.01, asset: 'USDC' };
    const recorded = async () => (await api('GET', `/payment/history/${seller.wallet}`)).body.total;
    const { receipt: first, recordedBefore: before } = await oneReceiptPerPayload({
      receive: () => api('POST', '/transaction/receive', body),
      receiptFields: ['paymentId', 'transaction', 'expiresAt', 'lastValidBlockHeight', 'status'],
      receiptsRecorded: recorded,
    });
    // The receipt was asked for no resource; asked again for one, it would say it paid for that.
    const forResource = await api('POST', '/transaction/receive', {
      ...body,
      resource: 'https://shop.example/b',
    });
    assert.deepEqual(
      [forResource.status, forResource.body.error?.details?.paymentProof],
      [422, 'resource_mismatch'],
    );
    assert.equal(await recorded(), before + 1, 'still one receipt');

    const held = await usdcOf(seller.wallet);
    const signature = await signAndBroadcast(chain.localnet.rpcUrl, first.body.transaction, seller.secretKey);
    const status = await settle(first.body.paymentId);
    assert.deepEqual([status.status, status.signature], ['confirmed', signature]);
    assert.equal((await usdcOf(seller.wallet)) - held, 10_000n);
    assert.equal(await recorded(), before + 1);
    const again = await api('POST', '/transaction/receive', body);
    assert.deepEqual([again.status, again.body.error.details.paymentProof], [422, 'already_used']);
  });

  it('a payload that pays another wallet is refused for that, while its receipt is pending and once it is used: never `already_used` to someone it does not pay', async () => {
    const { header } = await v2Payment(seller.wallet, '10000');
    const body = { walletAddress: seller.wallet, paymentProof: header, expectedAmount: 0.01, asset: 'USDC' };
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    // Another account, which saw the payment go by, presents it for its own wallet.
    const stranger = await gw.newCaller('standard');
    const wallet = (await callAs(gw, stranger.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    const refusals = () =>
      Promise.all(
        presentedFor(header, wallet, 'solana-devnet').map(async (paymentProof) => {
          const res = await callAs(gw, stranger.key, 'POST', '/transaction/receive', {
            walletAddress: wallet,
            paymentProof,
            expectedAmount: 0.01,
            asset: 'USDC',
          });
          return [res.status, res.body.error?.code, res.body.error?.details?.paymentProof];
        }),
      );
    const mismatch = [422, 'PAYMENT_VERIFICATION_FAILED', 'invalid_exact_svm_payload_recipient_mismatch'];
    assert.deepEqual(await refusals(), [mismatch, mismatch], 'while the seller’s receipt is pending');

    const signature = await signAndBroadcast(chain.localnet.rpcUrl, built.body.transaction, seller.secretKey);
    const status = await settle(built.body.paymentId);
    assert.deepEqual([status.status, status.signature], ['confirmed', signature]);
    assert.deepEqual(await refusals(), [mismatch, mismatch], 'once it is used');
    // To the wallet it pays, it is used.
    const again = await api('POST', '/transaction/receive', body);
    assert.deepEqual([again.status, again.body.error.details.paymentProof], [422, 'already_used']);
  });

  it('finds the payment however many transactions the buyer made after it (the buyer’s history is paged)', async () => {
    const { buyer, header } = await v2Payment(seller.wallet, '10000');
    const built = await api('POST', '/transaction/receive', {
      walletAddress: seller.wallet,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    });
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const signature = await signAndBroadcast(chain.localnet.rpcUrl, built.body.transaction, seller.secretKey);
    while ((await chain.adapter.getSignatureStatus(signature)) === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // More than a page of the buyer's history lands after the payment.
    for (let i = 0; i < 130; i++) chain.localnet.airdrop(buyer, LAMPORTS / 100n + BigInt(i));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const status = await settle(built.body.paymentId);
    assert.deepEqual([status.status, status.signature], ['confirmed', signature]);
  });

  it('takes a v1 X-PAYMENT value (x402 1.x client) built with the seller as fee payer', async () => {
    const buyerKey = await newV1SvmBuyer(chain);
    await api('POST', '/faucet', { address: buyerKey.address, amount: 1, token: 'USDC' });
    const header = await buyerKey.paymentHeader({
      amount: '30000',
      payTo: seller.wallet,
      feePayer: seller.wallet,
      resource: 'https://shop.example/v1',
    });
    const built = await api('POST', '/transaction/receive', {
      walletAddress: seller.wallet,
      paymentProof: header,
      expectedAmount: 0.03,
      asset: 'USDC',
    });
    assert.equal(built.status, 200, JSON.stringify(built.body));
    assert.equal(built.body.sender, buyerKey.address);
    const signature = await signAndBroadcast(chain.localnet.rpcUrl, built.body.transaction, seller.secretKey);
    const status = await settle(built.body.paymentId);
    assert.deepEqual([status.status, status.signature, status.amount], ['confirmed', signature, 0.03]);
  });

  it('expires a receipt never broadcast only once its blockhash can no longer land; then builds no other', async () => {
    const { header } = await v2Payment(seller.wallet, '10000');
    const body = { walletAddress: seller.wallet, paymentProof: header, expectedAmount: 0.01, asset: 'USDC' };
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    await reconciler.runOnce();
    assert.equal((await api('GET', `/payment/status/${built.body.paymentId}`)).body.status, 'pending');
    while ((await chain.adapter.getBlockHeight()) <= BigInt(built.body.lastValidBlockHeight)) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const status = await settle(built.body.paymentId);
    assert.equal(status.status, 'expired');
    // The buyer's blockhash is gone: the payload can never land, so no new receipt is built for it.
    const recorded = (await api('GET', `/payment/history/${seller.wallet}`)).body.total;
    const again = await api('POST', '/transaction/receive', body);
    assert.equal(again.status, 422, JSON.stringify(again.body));
    assert.equal(again.body.error.code, 'PAYMENT_VERIFICATION_FAILED');
    assert.equal((await api('GET', `/payment/history/${seller.wallet}`)).body.total, recorded);
  });

  it('refuses a payload whose fee payer is not the seller’s wallet, a wallet that cannot pay the fee, another recipient, facilitatorUrl and priorityFee', async () => {
    const supported = await api('GET', '/facilitator/supported');
    assert.equal(
      supported.status,
      403,
      'a Standard key may not use the facilitator, but its fee payer is public',
    );
    const gatewayFeePayer = gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    const forFacilitator = await v2Payment(gatewayFeePayer, '10000');
    const body = {
      walletAddress: seller.wallet,
      paymentProof: forFacilitator.header,
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const refused = await api('POST', '/transaction/receive', body);
    assert.equal(refused.status, 422);
    assert.deepEqual(
      [refused.body.error.code, refused.body.error.details.paymentProof],
      ['PAYMENT_VERIFICATION_FAILED', 'invalid_exact_svm_payload_missing_fee_payer'],
    );

    const { header } = await v2Payment(seller.wallet, '10000');
    const bad = [
      [{ facilitatorUrl: 'https://facilitator.example' }, 'facilitatorUrl'],
      [{ priorityFee: 0.0001 }, 'priorityFee'],
    ] as const;
    for (const [extra, field] of bad) {
      const res = await api('POST', '/transaction/receive', {
        walletAddress: seller.wallet,
        paymentProof: header,
        expectedAmount: 0.01,
        asset: 'USDC',
        ...extra,
      });
      assert.equal(res.status, 400, field);
      assert.equal(res.body.error.code, 'INVALID_PARAMETERS');
      assert.equal(typeof res.body.error.details[field], 'string');
    }
    const low = await api('POST', '/transaction/receive', {
      walletAddress: seller.wallet,
      paymentProof: header,
      expectedAmount: 0.02,
      asset: 'USDC',
    });
    assert.deepEqual([low.status, low.body.error.details.paymentProof], [422, 'amount_too_low']);
    // A wallet that cannot pay the fee it signs for: refused before the simulation blames the buyer.
    const poor = generateSolanaKeypair();
    assert.equal((await watchAddress(gw, seller.key, poor)).statusCode, 200);
    const unpaid = await v2Payment(poor.address, '10000', poor.address);
    const broke = await api('POST', '/transaction/receive', {
      walletAddress: poor.address,
      paymentProof: unpaid.header,
      expectedAmount: 0.01,
      asset: 'USDC',
    });
    assert.deepEqual(
      [broke.status, broke.body.error.code, typeof broke.body.error.details.walletAddress],
      [422, 'INSUFFICIENT_BALANCE', 'string'],
    );
    const other = await api('POST', '/wallets', { chain: 'solana' });
    const elsewhere = await api('POST', '/transaction/receive', {
      walletAddress: other.body.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    });
    assert.deepEqual(
      [elsewhere.status, elsewhere.body.error.details.paymentProof],
      [422, 'recipient_mismatch'],
    );
    // An asset that is no Solana address: refused as another asset than the stated one (never asked of
    // the adapter, which throws on it: it was a 500).
    const payload = decodePaymentSignatureHeader(header);
    for (const asset of ['not-an-address', `0x${'ab'.repeat(20)}`, 'x'.repeat(2_000)]) {
      const odd = await api('POST', '/transaction/receive', {
        walletAddress: seller.wallet,
        paymentProof: encodePaymentSignatureHeader({ ...payload, accepted: { ...payload.accepted, asset } }),
        expectedAmount: 0.01,
        asset: 'USDC',
      });
      assert.deepEqual([odd.status, odd.body.error.details?.paymentProof], [422, 'asset_mismatch'], asset);
    }
  });
});

/**
 * The same on EVM: the payload is the buyer's EIP-3009 authorization, and the answer an unsigned
 * EIP-1559 transaction from the seller's wallet submitting it with transferWithAuthorization.
 */
describe('x402 EVM payloads in POST /transaction/receive: the seller submits transferWithAuthorization', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let reconciler: PaymentReconciler;
  let seller: { key: string; wallet: EvmLocalWallet };
  let anvil: ReturnType<typeof createTestClient>;

  const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, seller.key, method, url, payload);
  const usdcOf = async (owner: string) =>
    (await evm.adapter.getTokenAccounts(owner)).find((a) => a.mint === evm.usdc.address)?.amount ?? 0n;
  const payment = async (amount: string, maxTimeoutSeconds = 60) => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await api('POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = evmExactRequirements(evm, {
      amount,
      payTo: seller.wallet.address,
      maxTimeoutSeconds,
    });
    const payload = await evmPayload(buyer, requirements, 'https://shop.example/evm');
    return { buyer: buyer.address, header: encodePaymentSignatureHeader(payload) };
  };
  const settle = (paymentId: string) =>
    untilNotPending(reconciler, () => api('GET', `/payment/status/${paymentId}`), 50);

  before(async () => {
    evm = await startTestEvm();
    anvil = createTestClient({ mode: 'anvil', transport: http(evm.adapter.info.rpcUrl) });
    gw = await startTestGateway({ networks: new NetworkRegistry([evm.adapter]) });
    await gw.services.facilitator.start();
    reconciler = handReconciler(gw, 'x402-evm-local-worker');
    const caller = await gw.newCaller('standard');
    seller = { key: caller.key, wallet: await newWatchedEvmWallet(gw, evm, caller.key) };
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('answers an unsigned transferWithAuthorization from the seller; once mined it is recorded once', async () => {
    const { buyer, header } = await payment('20000');
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
      ['pending', 0.02, buyer, { symbol: 'USDC', address: evm.usdc.address, decimals: 6 }],
    );
    const tx = parseTransaction(bytesToHex(Buffer.from(b.transaction, 'base64')));
    assert.equal(tx.type, 'eip1559');
    assert.equal(tx.to?.toLowerCase(), evm.usdc.address.toLowerCase());
    assert.equal(tx.value ?? 0n, 0n);

    const held = await usdcOf(seller.wallet.address);
    const hash = await signAndBroadcastEvm(evm.adapter.info.rpcUrl, b.transaction, seller.wallet.privateKey);
    const status = await settle(b.paymentId);
    assert.deepEqual(
      [status.status, status.signature, status.amount, status.sender],
      ['confirmed', hash, 0.02, buyer],
    );
    assert.equal((await usdcOf(seller.wallet.address)) - held, 20_000n);
    const again = await api('POST', '/transaction/receive', body);
    assert.deepEqual([again.status, again.body.error.details.paymentProof], [422, 'already_used']);
    // The facilitator cannot settle the used authorization either.
    const facilitated = await api('POST', '/payment/receive', body);
    assert.equal(facilitated.status, 422);
  });

  it('a payload that pays another wallet is refused for that, while its receipt is pending and once it is used: never `already_used` to someone it does not pay', async () => {
    const { header } = await payment('10000');
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const stranger = await gw.newCaller('standard');
    const wallet = (await callAs(gw, stranger.key, 'POST', '/wallets', { chain: 'evm' })).body.address;
    const refusals = () =>
      Promise.all(
        presentedFor(header, wallet, evm.adapter.info.id).map(async (paymentProof) => {
          const res = await callAs(gw, stranger.key, 'POST', '/transaction/receive', {
            walletAddress: wallet,
            paymentProof,
            expectedAmount: 0.01,
            asset: 'USDC',
          });
          return [res.status, res.body.error?.code, res.body.error?.details?.paymentProof];
        }),
      );
    const mismatch = [422, 'PAYMENT_VERIFICATION_FAILED', 'invalid_exact_evm_recipient_mismatch'];
    assert.deepEqual(await refusals(), [mismatch, mismatch], 'while the seller’s receipt is pending');

    const hash = await signAndBroadcastEvm(
      evm.adapter.info.rpcUrl,
      built.body.transaction,
      seller.wallet.privateKey,
    );
    const status = await settle(built.body.paymentId);
    assert.deepEqual([status.status, status.signature], ['confirmed', hash]);
    assert.deepEqual(await refusals(), [mismatch, mismatch], 'once it is used');
    const again = await api('POST', '/transaction/receive', body);
    assert.deepEqual([again.status, again.body.error.details.paymentProof], [422, 'already_used']);
  });

  it('a receipt whose authorization the facilitator settled first fails; the payment is recorded once, by the facilitator', async () => {
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
    assert.equal(status.status, 'failed');
    const history = await api('GET', `/payment/history/${seller.wallet.address}`);
    const received = history.body.payments.filter(
      (p: { signature: string | null }) => p.signature === settled.body.signature,
    );
    assert.equal(
      received.length,
      2,
      'the facilitator’s payment, and the failed receipt naming the same transaction',
    );
    assert.deepEqual(received.map((p: { status: string }) => p.status).sort(), ['confirmed', 'failed']);
  });

  it('an authorization used between the receipt’s verification and its building is already used (the facilitator settled it), not 500', async () => {
    const { header } = await payment('10000');
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const scheme = gw.services.facilitator.schemeFor(evm.adapter.info.id);
    assert.ok(scheme?.forSeller !== undefined);
    const forSeller = scheme.forSeller.bind(scheme);
    let settled: Awaited<ReturnType<typeof api>> | undefined;
    // Verified, then settled by the facilitator before the seller's transaction is built.
    scheme.forSeller = async (payload, req) => {
      settled = await api('POST', '/payment/receive', body);
      return forSeller(payload, req);
    };
    try {
      const built = await api('POST', '/transaction/receive', body);
      assert.equal(settled?.status, 200, JSON.stringify(settled?.body));
      assert.equal(built.status, 422, JSON.stringify(built.body));
      assert.deepEqual(
        [built.body.error.code, built.body.error.details.paymentProof],
        ['INVALID_PAYMENT_PROOF', 'already_used'],
      );
    } finally {
      scheme.forSeller = forSeller;
    }
  });

  it('the same authorization again while its receipt is pending, even twice at the same instant, answers that one receipt', async () => {
    const { header } = await payment('10000');
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const recorded = async () => (await api('GET', `/payment/history/${seller.wallet.address}`)).body.total;
    const { receipt: first, recordedBefore: before } = await oneReceiptPerPayload({
      receive: () => api('POST', '/transaction/receive', body),
      receiptFields: ['paymentId', 'transaction', 'expiresAt', 'lastValidBlockHeight'],
      receiptsRecorded: recorded,
    });
    const held = await usdcOf(seller.wallet.address);
    const hash = await signAndBroadcastEvm(
      evm.adapter.info.rpcUrl,
      first.body.transaction,
      seller.wallet.privateKey,
    );
    const status = await settle(first.body.paymentId);
    assert.deepEqual([status.status, status.signature], ['confirmed', hash]);
    assert.equal((await usdcOf(seller.wallet.address)) - held, 10_000n);
    assert.equal(await recorded(), before + 1);
  });

  it('once its receipt failed, the same authorization, which can still land, gets a new receipt', async () => {
    const { header } = await payment('10000');
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const first = await api('POST', '/transaction/receive', body);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    // However it failed (here: marked so by hand), the authorization is still unused on chain.
    const record = await gw.store.payments.get(first.body.paymentId);
    assert.ok(record !== undefined);
    await gw.services.ledger.move(record, 'failed', { error: 'the receipt failed' });
    const second = await api('POST', '/transaction/receive', body);
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.notEqual(second.body.paymentId, first.body.paymentId);
    const third = await api('POST', '/transaction/receive', body);
    assert.deepEqual(
      [third.body.paymentId, third.body.transaction, third.body.expiresAt],
      [second.body.paymentId, second.body.transaction, second.body.expiresAt],
    );
    const hash = await signAndBroadcastEvm(
      evm.adapter.info.rpcUrl,
      second.body.transaction,
      seller.wallet.privateKey,
    );
    assert.deepEqual(
      [(await settle(second.body.paymentId)).status, (await settle(second.body.paymentId)).signature],
      ['confirmed', hash],
    );
    assert.equal((await api('GET', `/payment/status/${first.body.paymentId}`)).body.status, 'failed');
  });

  // Last: it moves the chain's clock ahead of the gateway's.
  it('a receipt whose authorization’s nonce the buyer spent first on another authorization (to itself) is never taken as paid', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await api('POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const payload = await evmPayload(
      buyer,
      evmExactRequirements(evm, { amount: '10000', payTo: seller.wallet.address }),
    );
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: encodePaymentSignatureHeader(payload),
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const submitter = privateKeyToAccount(generatePrivateKey());
    await api('POST', '/faucet', { address: submitter.address, amount: 1 });
    const { authorization } = payload.payload as {
      authorization: { validAfter: string; validBefore: string; nonce: `0x${string}` };
    };
    await spendNonceOnAnotherAuthorization(evm, buyer, authorization, submitter);
    // The token says the nonce is used, but no transfer paid the seller: this authorization can never
    // land now.
    const status = await settle(built.body.paymentId);
    assert.equal(status.status, 'expired', JSON.stringify(status));
    assert.equal(
      (await api('GET', `/payment/history/${seller.wallet.address}`)).body.payments.some(
        (p: { paymentId: string; status: string }) =>
          p.paymentId === built.body.paymentId && p.status === 'confirmed',
      ),
      false,
    );
  });

  it('expires a receipt never submitted once the chain passes the authorization’s validBefore; then builds no other', async () => {
    const { header } = await payment('10000', 30);
    const body = {
      walletAddress: seller.wallet.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    };
    const built = await api('POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    assert.ok(built.body.expiresAt <= Date.now() + 30_000, 'expiresAt is no later than validBefore');
    await reconciler.runOnce();
    assert.equal((await api('GET', `/payment/status/${built.body.paymentId}`)).body.status, 'pending');
    await anvil.increaseTime({ seconds: 120 });
    await anvil.mine({ blocks: 1 });
    assert.equal((await settle(built.body.paymentId)).status, 'expired');
    // No block can carry the authorization any more: no new receipt is built for it.
    const recorded = (await api('GET', `/payment/history/${seller.wallet.address}`)).body.total;
    const again = await api('POST', '/transaction/receive', body);
    assert.equal(again.status, 422, JSON.stringify(again.body));
    assert.equal(again.body.error.code, 'PAYMENT_VERIFICATION_FAILED');
    assert.equal((await api('GET', `/payment/history/${seller.wallet.address}`)).body.total, recorded);
  });
});
