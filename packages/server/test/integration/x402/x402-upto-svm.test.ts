import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { address, createSolanaRpc, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { x402Client } from '@x402/core/client';
import {
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { paymentMiddleware, setSettlementOverrides, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment } from '@x402/fetch';
import { UptoSvmScheme as UptoBuyer } from '@x402/svm/upto/client';
import { UptoSvmScheme as UptoSeller } from '@x402/svm/upto/server';
import express from 'express';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SettlementFinisher } from '../../../src/workers/settlement-finisher.ts';
import { UptoEscrowSweep } from '../../../src/workers/upto-escrow-sweep.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { recordingFetch, stockPayload } from '../../support/x402-buyer.ts';
import { gatewayFacilitator } from '../../support/x402-shop.ts';

const MAX = 50_000n;
const SETTLE_WAIT_MS = 3_000;

/**
 * x402 `upto` on Solana served by gate402's OWN facilitator, as the stock packages speak it: a stock
 * `@x402/express` seller with `@x402/svm/upto/server` (delegating the receiver authorizer to the
 * facilitator it names: gate402) whose handler states the actual amount with `setSettlementOverrides`,
 * and a stock `@x402/fetch` buyer with `@x402/svm/upto/client` who signs a payment-channel open of the
 * maximum. gate402 co-signs and sends the open (the deposit) before the handler runs and claims the
 * actual amount after it (settleAndSeal + distribute): the buyer pays what the seller settles, once.
 * On a SQLite file (PostgreSQL when DATABASE_URL is set) and the embedded localnet.
 */
describe('x402 upto on Solana: gate402’s facilitator with the stock seller and buyer', () => {
  let chain: TestChain;
  let storage: TempStorage;
  let gw: TestGateway;
  let gatewayUrl: string;
  let seller: { key: string; accountId: string; solana: string };
  let feePayer: string;
  const masterKey = new Uint8Array(randomBytes(32));
  const usdc = () => chain.localnet.usdcMint.address;

  const start = async (adapter: ChainAdapter = chain.adapter) => {
    const started = await startTestGateway({
      storage,
      masterKey,
      networks: new NetworkRegistry([adapter]),
      confirmTimeoutMs: SETTLE_WAIT_MS,
      // Processes come and go on one database (the crash test); the suite removes it at the end.
      disposeStorage: false,
    });
    await started.services.facilitator.start();
    return started;
  };
  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);
  const balance = async (owner: string): Promise<bigint> => {
    const [ata] = await findAssociatedTokenPda({
      owner: address(owner),
      mint: address(usdc()),
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    const { value } = await createSolanaRpc(chain.localnet.rpcUrl)
      .getTokenAccountBalance(ata, { commitment: 'confirmed' })
      .send();
    return BigInt(value.amount);
  };
  const newBuyer = async (usdcUnits = 1_000_000n): Promise<KeyPairSigner> => {
    const buyer = await generateKeyPairSigner();
    chain.localnet.airdrop(buyer.address, 1_000_000_000n);
    await chain.localnet.mintUsdc(buyer.address, usdcUnits);
    return buyer;
  };

  /** The requirements the stock seller makes from gate402's /supported kind (delegated authorizer). */
  const requirementsFor = async (on: TestGateway, payTo: string, max = MAX): Promise<PaymentRequirements> => {
    const kind = on.services.facilitator
      .supported()
      .kinds.find((k) => k.scheme === 'upto' && k.network === SOLANA_DEVNET_ID);
    assert.ok(kind !== undefined, 'upto is listed under devnet’s id');
    return new UptoSeller().enhancePaymentRequirements(
      {
        scheme: 'upto',
        network: SOLANA_DEVNET_ID,
        asset: usdc(),
        amount: max.toString(),
        payTo,
        maxTimeoutSeconds: 300,
        extra: {},
      },
      { x402Version: 2, scheme: 'upto', network: SOLANA_DEVNET_ID, extra: kind.extra ?? {} },
      [],
    );
  };
  const payloadFor = async (buyer: KeyPairSigner, requirements: PaymentRequirements) =>
    stockPayload(new UptoBuyer(buyer, { rpcUrl: chain.localnet.rpcUrl }), requirements);
  const phase = (p: PaymentPayload, type: 'deposit' | 'claim', more: object = {}): PaymentPayload => ({
    ...p,
    payload: { ...p.payload, type, ...more },
  });
  const settle = async (on: TestGateway, key: string, p: PaymentPayload, requirements: PaymentRequirements) =>
    (
      await callAs(on, key, 'POST', '/facilitator/settle', {
        x402Version: 2,
        paymentPayload: p,
        paymentRequirements: requirements,
      })
    ).body as {
      success: boolean;
      errorReason?: string;
      transaction: string;
      amount?: string;
      payer?: string;
    };

  before(async () => {
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    chain = await startTestChain();
    gw = await start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      solana: (await api(caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
    };
    // distribute pays the seller's token account: a first USDC mint opens it.
    await chain.localnet.mintUsdc(seller.solana, 1n);
    feePayer = gw.services.facilitator.supported().signers['solana:*']?.[0] ?? '';
  });

  after(async () => {
    await gw?.close();
    await chain?.close();
    await storage?.dispose();
  });

  it('lists upto on Solana under x402 v2 only, with the feePayer and receiverAuthorizer stock sellers need', async () => {
    const { status, body } = await api(seller.key, 'GET', '/facilitator/supported');
    assert.equal(status, 200);
    const upto = (body.kinds as { x402Version: number; scheme: string; network: string; extra?: object }[])
      .filter((k) => k.scheme === 'upto')
      .sort((a, b) => a.network.localeCompare(b.network));
    assert.deepEqual(
      upto,
      [chain.adapter.info.id, SOLANA_DEVNET_ID].sort().map((network) => ({
        x402Version: 2,
        scheme: 'upto',
        network,
        extra: { feePayer, receiverAuthorizer: feePayer },
      })),
    );
  });

  it('@x402/fetch pays the @x402/express upto seller: the buyer’s balance drops by the settled amount, not the maximum, once', async () => {
    // A stock seller: up to 0.05 USDC; the handler charges what the query says it used.
    const server = new x402ResourceServer(gatewayFacilitator(gatewayUrl, seller.key));
    server.register(SOLANA_DEVNET_ID, new UptoSeller());
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /metered': {
            accepts: {
              scheme: 'upto',
              network: SOLANA_DEVNET_ID,
              payTo: seller.solana,
              price: { amount: MAX.toString(), asset: usdc() },
              maxTimeoutSeconds: 300,
            },
            description: 'metered by use, up to 0.05 USDC',
          },
        },
        server,
      ),
    );
    app.get('/metered', (req, res) => {
      setSettlementOverrides(res, { amount: String(req.query.used) });
      res.json({ used: String(req.query.used) });
    });
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    try {
      const url = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/metered?used=12345`;
      const buyer = await newBuyer();
      const client = x402Client.fromConfig({
        schemes: [
          { network: SOLANA_DEVNET_ID, client: new UptoBuyer(buyer, { rpcUrl: chain.localnet.rpcUrl }) },
        ],
        spendControls: { allowedAssets: [{ network: SOLANA_DEVNET_ID, asset: usdc() }] },
      });
      const { fetch: recording, sent } = recordingFetch();
      const sellerBefore = await balance(seller.solana);
      const res = await wrapFetchWithPayment(recording, client)(url);
      assert.equal(res.status, 200, await res.clone().text());
      assert.deepEqual(await res.json(), { used: '12345' });
      const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
      assert.deepEqual(
        [settled.success, settled.payer, settled.amount],
        [true, buyer.address, '12345'],
        JSON.stringify(settled),
      );
      assert.equal(await balance(buyer.address), 1_000_000n - 12_345n, 'the buyer pays the settled amount');
      assert.equal(await balance(seller.solana), sellerBefore + 12_345n, 'the seller receives it');
      const history = await api(seller.key, 'GET', `/payment/history/${seller.solana}`);
      assert.deepEqual(
        [history.body.total, history.body.payments[0].amount, history.body.payments[0].sender],
        [1, 0.012345, buyer.address],
        'one payment: the claim (the deposit moved nothing to the seller)',
      );

      // The same payload again: the deposit and the claim are each settled once, at any amount.
      const payload = decodePaymentSignatureHeader(sent[0] ?? '');
      const deposit = await settle(gw, seller.key, phase(payload, 'deposit'), payload.accepted);
      assert.deepEqual([deposit.success, deposit.errorReason], [false, 'duplicate_settlement']);
      for (const amount of ['12345', '40000']) {
        const again = await settle(gw, seller.key, phase(payload, 'claim'), { ...payload.accepted, amount });
        assert.deepEqual(
          [again.success, again.errorReason, again.transaction, again.amount],
          [false, 'duplicate_settlement', settled.transaction, '12345'],
        );
      }
      assert.equal(await balance(buyer.address), 1_000_000n - 12_345n);
      assert.equal((await api(seller.key, 'GET', `/payment/history/${seller.solana}`)).body.total, 1);
    } finally {
      await new Promise((resolve) => listening.close(() => resolve(undefined)));
    }
  });

  /** A buyer's payload for the seller's requirements, deposited by the seller's account. */
  const deposited = async (max = MAX) => {
    const buyer = await newBuyer();
    const requirements = await requirementsFor(gw, seller.solana, max);
    const payload = await payloadFor(buyer, requirements);
    const deposit = await settle(gw, seller.key, phase(payload, 'deposit'), requirements);
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    assert.equal(deposit.amount, max.toString());
    assert.equal(await balance(buyer.address), 1_000_000n - max, 'the deposit is the signed maximum');
    return { buyer, requirements, payload };
  };
  const claim = (p: PaymentPayload, requirements: PaymentRequirements, amount: bigint, key = seller.key) =>
    settle(gw, key, phase(p, 'claim'), { ...requirements, amount: amount.toString() });

  it('POST /payment/receive takes an upto PAYMENT-SIGNATURE value: it deposits the maximum and claims expectedAmount, once', async () => {
    const receive = (key: string, payload: PaymentPayload, expectedAmount: number) =>
      api(key, 'POST', '/payment/receive', {
        walletAddress: seller.solana,
        paymentProof: encodePaymentSignatureHeader(payload),
        expectedAmount,
        asset: 'USDC',
      });
    const buyer = await newBuyer();
    const requirements = await requirementsFor(gw, seller.solana);
    const payload = await payloadFor(buyer, requirements);
    const sellerBefore = await balance(seller.solana);
    // /v1/payments/verify checks the signed maximum covers `amount` and could be deposited; nothing moves.
    const verify = async (amount: number) =>
      (
        await api(seller.key, 'POST', '/v1/payments/verify', {
          payment_proof: encodePaymentSignatureHeader(payload),
          amount,
          recipient: seller.solana,
          asset: 'USDC',
        })
      ).body;
    assert.equal((await verify(12_300)).verified, true);
    assert.deepEqual(
      [(await verify(50_001)).verified, (await verify(50_001)).reason],
      [false, 'amount_too_low'],
    );
    assert.equal(await balance(buyer.address), 1_000_000n);
    const received = await receive(seller.key, payload, 0.0123);
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.deepEqual(
      [received.body.amountReceived, received.body.sender, received.body.status],
      [0.0123, buyer.address, 'confirmed'],
    );
    assert.equal(
      await balance(buyer.address),
      1_000_000n - 12_300n,
      'the buyer pays expectedAmount, not the maximum',
    );
    assert.equal(await balance(seller.solana), sellerBefore + 12_300n);
    const again = await receive(seller.key, payload, 0.04);
    assert.deepEqual(
      [again.status, again.body.error.code, again.body.error.details.paymentProof],
      [422, 'INVALID_PAYMENT_PROOF', 'already_used'],
    );

    // Deposited already (by this account's paywall, or its receive that died before the claim): the
    // receive goes on to the claim, once.
    const second = await payloadFor(buyer, requirements);
    const deposit = await settle(gw, seller.key, phase(second, 'deposit'), requirements);
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    const claimed = await receive(seller.key, second, 0.001);
    assert.equal(claimed.status, 200, JSON.stringify(claimed.body));
    assert.equal(await balance(buyer.address), 1_000_000n - 12_300n - 1_000n);
    assert.equal(
      (await receive(seller.key, second, 0.001)).body.error?.details?.paymentProof,
      'already_used',
    );

    // More than the signed maximum, or an open whose vouchers another key signs (the caller has no voucher
    // key to claim it with): refused before anything is deposited.
    const over = await receive(seller.key, await payloadFor(buyer, requirements), 0.06);
    assert.equal(over.status, 422, JSON.stringify(over.body));
    // Nor does an `accepted` copy claiming a larger maximum than the open signs (no signature covers it).
    const unsigned = await payloadFor(buyer, requirements);
    const inflated = await receive(
      seller.key,
      { ...unsigned, accepted: { ...unsigned.accepted, amount: '100000' } },
      0.06,
    );
    assert.deepEqual(
      [inflated.status, inflated.body.error.details.paymentProof],
      [422, 'amount_too_low'],
      JSON.stringify(inflated.body),
    );
    const foreign = await new UptoSeller({
      receiverAuthorizerSigner: await generateKeyPairSigner(),
    }).enhancePaymentRequirements(
      requirements,
      { x402Version: 2, scheme: 'upto', network: SOLANA_DEVNET_ID, extra: requirements.extra },
      [],
    );
    const elsewhere = await receive(seller.key, await payloadFor(buyer, foreign), 0.01);
    assert.deepEqual(
      [elsewhere.status, elsewhere.body.error.details.paymentProof],
      [422, 'invalid_upto_svm_payload_receiver_authorizer'],
      JSON.stringify(elsewhere.body),
    );
    assert.equal(await balance(buyer.address), 1_000_000n - 12_300n - 1_000n, 'nothing else left the buyer');
  });

  it('a claim above the signed maximum is refused with the stock reason; nothing moves, and the maximum itself settles', async () => {
    const { buyer, requirements, payload } = await deposited();
    const over = await claim(payload, requirements, MAX + 1n);
    assert.deepEqual(
      [over.success, over.errorReason],
      [false, 'invalid_upto_svm_payload_settlement_exceeds_amount'],
    );
    assert.equal(await balance(buyer.address), 1_000_000n - MAX);
    const all = await claim(payload, requirements, MAX);
    assert.equal(all.success, true, JSON.stringify(all));
    assert.equal(await balance(buyer.address), 1_000_000n - MAX);
  });

  it('a claim of 0 gives the buyer the whole deposit back, on chain; no payment is recorded', async () => {
    const { buyer, requirements, payload } = await deposited();
    const before = (await api(seller.key, 'GET', `/payment/history/${seller.solana}`)).body.total;
    const zero = await claim(payload, requirements, 0n);
    assert.deepEqual([zero.success, zero.amount], [true, '0'], JSON.stringify(zero));
    assert.notEqual(zero.transaction, '');
    assert.equal(await balance(buyer.address), 1_000_000n);
    assert.equal((await api(seller.key, 'GET', `/payment/history/${seller.solana}`)).body.total, before);
  });

  it('refuses another mint, another payee, another network, and a payload without a phase', async () => {
    const buyer = await newBuyer();
    const requirements = await requirementsFor(gw, seller.solana);
    const payload = await payloadFor(buyer, requirements);
    const stranger = (await generateKeyPairSigner()).address;
    const otherMint = 'So11111111111111111111111111111111111111112';
    const cases: [PaymentRequirements, string][] = [
      [{ ...requirements, asset: otherMint }, 'unsupported_asset'],
      [{ ...requirements, payTo: stranger }, 'invalid_upto_svm_payload_recipient_mismatch'],
      [{ ...requirements, network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' }, 'invalid_network'],
    ];
    for (const [changed, reason] of cases) {
      for (const type of ['deposit', 'claim'] as const) {
        const answer = await settle(gw, seller.key, phase({ ...payload, accepted: changed }, type), changed);
        assert.deepEqual([answer.success, answer.errorReason], [false, reason], `${type} ${reason}`);
      }
    }
    const untyped = await settle(gw, seller.key, payload, requirements);
    assert.deepEqual([untyped.success, untyped.errorReason], [false, 'invalid_payload']);
    assert.equal(await balance(buyer.address), 1_000_000n, 'nothing was deposited');
  });

  it('a claim before the deposit, or by another account, is refused; a replayed deposit is a duplicate', async () => {
    const buyer = await newBuyer();
    const requirements = await requirementsFor(gw, seller.solana);
    const payload = await payloadFor(buyer, requirements);
    const early = await claim(payload, requirements, 1_000n);
    assert.deepEqual([early.success, early.errorReason], [false, 'upto_deposit_not_settled']);
    const first = await settle(gw, seller.key, phase(payload, 'deposit'), requirements);
    assert.equal(first.success, true, JSON.stringify(first));
    const replay = await settle(gw, seller.key, phase(payload, 'deposit'), requirements);
    assert.deepEqual(
      [replay.success, replay.errorReason, replay.transaction],
      [false, 'duplicate_settlement', first.transaction],
    );
    const other = await gw.newCaller('premium');
    const stolen = await claim(payload, requirements, MAX, other.key);
    assert.deepEqual([stolen.success, stolen.errorReason], [false, 'upto_deposit_not_settled']);
    assert.equal(await balance(buyer.address), 1_000_000n - MAX, 'deposited once');
  });

  it('a seller with its own receiver authorizer: its voucher settles the claim; a voucher of another key, or for another amount, is refused', async () => {
    const authorizer = await generateKeyPairSigner();
    const ownSeller = new UptoSeller({ receiverAuthorizerSigner: authorizer });
    const kind = gw.services.facilitator
      .supported()
      .kinds.find((k) => k.scheme === 'upto' && k.network === SOLANA_DEVNET_ID);
    const requirements = await ownSeller.enhancePaymentRequirements(
      {
        scheme: 'upto',
        network: SOLANA_DEVNET_ID,
        asset: usdc(),
        amount: MAX.toString(),
        payTo: seller.solana,
        maxTimeoutSeconds: 300,
        extra: {},
      },
      { x402Version: 2, scheme: 'upto', network: SOLANA_DEVNET_ID, extra: kind?.extra ?? {} },
      [],
    );
    assert.equal(requirements.extra.receiverAuthorizer, authorizer.address);
    const buyer = await newBuyer();
    const payload = await payloadFor(buyer, requirements);
    const deposit = await settle(gw, seller.key, phase(payload, 'deposit'), requirements);
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    const voucherOf = async (by: UptoSeller, amount: bigint) =>
      by.enrichSettlementPayload({
        phase: 'after-handler',
        paymentPayload: payload,
        requirements: { ...requirements, amount: amount.toString() },
      } as never);
    const charged = { ...requirements, amount: '4321' };
    const noVoucher = await settle(gw, seller.key, phase(payload, 'claim'), charged);
    assert.deepEqual(
      [noVoucher.success, noVoucher.errorReason],
      [false, 'invalid_upto_svm_authorizer_address_mismatch'],
    );
    // A voucher for this channel and amount, signed by another key than the channel's authorizer.
    const strangerKey = await generateKeyPairSigner();
    const strangerVoucher = (await new UptoSeller({
      receiverAuthorizerSigner: strangerKey,
    }).enrichSettlementPayload({
      phase: 'after-handler',
      paymentPayload: { ...payload, payload: { ...payload.payload, authorizedSigner: strangerKey.address } },
      requirements: charged,
    } as never)) as { voucherSignature: string };
    const otherAmount = (await voucherOf(ownSeller, 9_999n)) as { voucherSignature: string };
    for (const voucherSignature of [otherAmount.voucherSignature, strangerVoucher.voucherSignature]) {
      assert.match(voucherSignature, /^[1-9A-HJ-NP-Za-km-z]{80,90}$/);
      const refused = await settle(gw, seller.key, phase(payload, 'claim', { voucherSignature }), charged);
      assert.deepEqual(
        [refused.success, refused.errorReason],
        [false, 'invalid_upto_svm_payload_voucher_signature'],
      );
    }
    const own = (await voucherOf(ownSeller, 4321n)) as { voucherSignature: string };
    const claimed = await settle(gw, seller.key, phase(payload, 'claim', own), charged);
    assert.deepEqual([claimed.success, claimed.amount], [true, '4321'], JSON.stringify(claimed));
    assert.equal(await balance(buyer.address), 1_000_000n - 4321n);
  });

  it('two claims of one channel at once (different amounts): one settles, once', async () => {
    const { buyer, requirements, payload } = await deposited();
    const sellerBefore = await balance(seller.solana);
    const answers = await Promise.all([
      claim(payload, requirements, 10_000n),
      claim(payload, requirements, 20_000n),
    ]);
    const won = answers.filter((a) => a.success);
    assert.equal(won.length, 1, JSON.stringify(answers));
    const paid = BigInt(won[0]?.amount ?? '-1');
    assert.ok(paid === 10_000n || paid === 20_000n);
    const lost = answers.find((a) => !a.success);
    assert.ok(
      lost?.errorReason === 'duplicate_settlement' || lost?.errorReason === 'settlement_pending',
      JSON.stringify(lost),
    );
    assert.equal(await balance(buyer.address), 1_000_000n - paid);
    assert.equal(await balance(seller.solana), sellerBefore + paid);
  });

  it('a crash between the claim’s broadcast and its record: the next process’s finisher records it once', async () => {
    const { buyer, requirements, payload } = await deposited();
    const sellerBefore = await balance(seller.solana);
    await gw.close();
    // This process sends the claim, then dies before it learns of it (its broadcast never returns).
    let sent = false;
    const dying: ChainAdapter = Object.create(chain.adapter, {
      broadcast: {
        value: async (wire: Uint8Array) => {
          await chain.adapter.broadcast(wire);
          sent = true;
          return new Promise<never>(() => {});
        },
      },
    });
    const first = await start(dying);
    const hung = callAs(first, seller.key, 'POST', '/facilitator/settle', {
      x402Version: 2,
      paymentPayload: phase(payload, 'claim'),
      paymentRequirements: { ...requirements, amount: '7777' },
    }).catch(() => undefined);
    for (let i = 0; i < 400 && !sent; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(sent, true, 'the claim reached the chain');
    const [open] = await first.store.settlements.listOpen(Date.now() + 60_000, 10);
    assert.match(open?.key ?? '', /:upto:claim:/);
    await first.close();
    void hung;

    gw = await start(chain.adapter);
    const finisher = new SettlementFinisher({
      store: gw.store,
      facilitator: gw.services.facilitator,
      instanceId: 'upto-svm-crash',
      settleWaitMs: SETTLE_WAIT_MS,
      leaseMs: 1,
      waitMs: 500,
      now: () => Date.now() + SETTLE_WAIT_MS + 1_000,
    });
    let row = await gw.store.settlements.get(open?.key ?? '');
    for (let i = 0; i < 40 && row?.status !== 'settled'; i++) {
      await finisher.runOnce();
      row = await gw.store.settlements.get(open?.key ?? '');
    }
    assert.deepEqual([row?.status, row?.amount, row?.transactionId], ['settled', 7777n, open?.transactionId]);
    assert.equal(await balance(buyer.address), 1_000_000n - 7777n);
    assert.equal(await balance(seller.solana), sellerBefore + 7777n);
    const again = await claim(payload, requirements, 7777n);
    assert.deepEqual([again.success, again.errorReason], [false, 'duplicate_settlement']);
    const history = await api(seller.key, 'GET', `/payment/history/${seller.solana}`);
    assert.equal(
      history.body.payments.filter((p: { signature?: string; txHash?: string }) =>
        JSON.stringify(p).includes(open?.transactionId ?? '-'),
      ).length,
      1,
      'one payment recorded for it',
    );
  });

  it('the sweep gives the whole deposit back once a channel can no longer be claimed, and not before', async () => {
    const { buyer } = await deposited();
    const sweep = (now: number) =>
      new UptoEscrowSweep({
        store: gw.store,
        networks: gw.networks,
        facilitator: gw.services.facilitator,
        instanceId: `sweep-${now}`,
        leaseMs: 1,
        now: () => now,
      }).runOnce();
    assert.deepEqual(await sweep(Date.now()), [], 'still claimable: left alone');
    assert.equal(await balance(buyer.address), 1_000_000n - MAX);
    const swept = await sweep(Date.now() + 2 * 3_600_000);
    assert.ok(
      swept.some((s) => s.action === 'refunded'),
      JSON.stringify(swept),
    );
    assert.equal(await balance(buyer.address), 1_000_000n, 'the buyer has the deposit back');
    const nothing = await sweep(Date.now() + 2 * 3_600_000 + 1);
    assert.equal(
      nothing.filter((s) => s.action === 'refunded').length,
      0,
      'a closed channel is not closed twice',
    );
  });
});
