import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner, getBase58Decoder } from '@solana/kit';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { createPermit2ApprovalTx } from '@x402/evm';
import {
  bytesToHex,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  keccak256,
  parseAbi,
  parseTransaction,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { permit2AuthorizationOf, permit2SettleCall } from '../../../src/chains/evm/permit2-payment.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SettlementFinisher } from '../../../src/workers/settlement-finisher.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs, callerOf } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { deployForwarder, forwardedCall } from '../../support/evm-forwarder.ts';
import { signAndBroadcastEvm } from '../../support/evm-local-signer.ts';
import { handReconciler, untilNotPending } from '../../support/hand-reconciler.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { newWatchedEvmWallet } from '../../support/watched-evm-wallet.ts';
import {
  evmExactRequirements,
  evmPayload,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';

const SETTLE_WAIT_MS = 1_500;

/**
 * A settle that outlives its wait answers `settlement_pending`, and then nobody settles again: the
 * gateway restarts, and the background finisher of the new process (one instance at a time, by a job
 * lease) looks at the stored transaction once the chain moves, settles it, and records the seller's
 * payment exactly as a settle that confirmed in time would. The localnet's slots advance only by hand.
 */
describe('x402 settlement finisher: a settlement left pending is finished in the background', () => {
  let chain: TestChain;
  let storage: TempStorage;
  let gw: TestGateway;
  let pumping: NodeJS.Timeout | undefined;
  const masterKey = new Uint8Array(randomBytes(32));

  const pump = (on: boolean) => {
    if (pumping !== undefined) clearInterval(pumping);
    pumping = on ? setInterval(() => chain.localnet.advanceSlots(1), 10) : undefined;
  };
  const start = async (disposeStorage: boolean) => {
    const started = await startTestGateway({
      storage,
      masterKey,
      networks: new NetworkRegistry([chain.adapter]),
      confirmTimeoutMs: SETTLE_WAIT_MS,
      disposeStorage,
    });
    await started.services.facilitator.start();
    return started;
  };
  const finisher = (instanceId: string, on = gw) =>
    new SettlementFinisher({
      store: on.store,
      facilitator: on.services.facilitator,
      instanceId,
      settleWaitMs: SETTLE_WAIT_MS,
      leaseMs: 1_000,
      waitMs: 300,
    });

  before(async () => {
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    chain = await startTestChain({ slotMs: 0, finalizedDepth: 2 });
    pump(true);
  });

  after(async () => {
    pump(false);
    await gw?.close();
    await chain?.close();
  });

  it('settles it after a restart, with no settle retry: the payment reaches status and history once', async () => {
    const first = await start(false);
    const seller = await first.newCaller('premium');
    const call = async (on: TestGateway, method: 'GET' | 'POST', url: string, payload?: object) =>
      (await callAs(on, seller.key, method, url, payload)).body;
    const wallet = (await call(first, 'POST', '/wallets', { chain: 'solana' })).address as string;
    const buyer = await generateKeyPairSigner();
    await call(first, 'POST', '/faucet', { address: wallet, amount: 0.01, token: 'USDC' });
    await call(first, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const feePayer = first.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    const requirements = svmExactRequirements(chain, { amount: '150000', payTo: wallet, feePayer });
    const paymentPayload = await svmPayload(chain, buyer, requirements);
    const body = { x402Version: 2, paymentPayload, paymentRequirements: requirements };

    pump(false);
    const pending = await call(first, 'POST', '/facilitator/settle', body);
    assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
    await first.close();

    gw = await start(true);
    const a = finisher('finisher-a');
    const b = finisher('finisher-b');
    // Not looked at while a settle could still be waiting on it; then the chain has not confirmed it.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_WAIT_MS));
    assert.equal(await a.runOnce(), 1);
    assert.equal(await b.runOnce(), 0, 'the other instance waits for the job lease');
    assert.equal((await call(gw, 'GET', `/payment/history/${wallet}`)).total, 0);

    pump(true);
    let history = await call(gw, 'GET', `/payment/history/${wallet}`);
    for (let i = 0; i < 80 && history.total === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      await a.runOnce();
      await b.runOnce();
      history = await call(gw, 'GET', `/payment/history/${wallet}`);
    }
    assert.equal(history.total, 1);
    const [entry] = history.payments;
    assert.deepEqual(
      [entry.type, entry.signature, entry.amount, entry.sender, entry.asset],
      [
        'received',
        pending.transaction,
        0.15,
        buyer.address,
        { symbol: 'USDC', address: chain.localnet.usdcMint.address, decimals: 6 },
      ],
    );
    const status = await call(gw, 'GET', `/payment/status/${entry.paymentId}`);
    assert.ok(['confirmed', 'finalized'].includes(status.status), status.status);
    const events = await gw.store.events.listAfter(seller.accountId, 0, 1_000);
    assert.deepEqual(
      events.filter((e) => e.paymentId === entry.paymentId).map((e) => e.type),
      ['payment.received'],
    );
    // Settled: the same payload again is a duplicate, and the buyer paid once.
    const again = await call(gw, 'POST', '/facilitator/settle', body);
    assert.deepEqual(
      [again.success, again.errorReason, again.transaction],
      [false, 'duplicate_settlement', pending.transaction],
    );
    assert.deepEqual(await gw.store.settlements.listOpen(Date.now(), 10), [], 'nothing left open');
    const held = (await chain.adapter.getTokenAccounts(buyer.address)).find(
      (t) => t.mint === chain.localnet.usdcMint.address,
    )?.amount;
    assert.equal(held, 1_000_000n - 150_000n);
  });

  it('fails a settlement whose transaction never landed once its blockhash has expired, recording nothing', async () => {
    const at = Date.now() - 60_000;
    const transactionId = getBase58Decoder().decode(new Uint8Array(randomBytes(64)));
    const key = `${chain.adapter.info.id}:exact:never-landed`;
    const claimed = await gw.store.settlements.claim({
      key,
      network: chain.adapter.info.id,
      payer: (await generateKeyPairSigner()).address,
      payTo: (await generateKeyPairSigner()).address,
      asset: chain.localnet.usdcMint.address,
      amount: 1_000n,
      transactionId,
      // Bytes no node takes: the stored transaction can never land, whatever is resent.
      signedTransaction: Buffer.from(randomBytes(200)).toString('base64'),
      lastValidBlockHeight: (await chain.adapter.getBlockHeight()) - 1n,
      status: 'submitted',
      error: null,
      paymentId: null,
      createdAt: at,
      updatedAt: at,
    });
    assert.equal(claimed, true);
    const worker = finisher('finisher-expiry');
    let row = await gw.store.settlements.get(key);
    for (let i = 0; i < 20 && row?.status === 'submitted'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      await worker.runOnce();
      row = await gw.store.settlements.get(key);
    }
    assert.equal(row?.status, 'failed');
    assert.match(row?.error ?? '', /expired/);
    assert.equal(row?.paymentId, null);
  });

  it('records the payment it finishes for the account that asked to settle, not for the account holding payTo, and keeps the fee charged to the asker', async () => {
    const seller = await gw.newCaller('premium');
    const holder = await gw.newCaller('premium');
    const as = async (who: { key: string }, method: 'GET' | 'POST', url: string, payload?: object) =>
      callAs(gw, who.key, method, url, payload);
    // payTo is a wallet of another account than the seller's who settles.
    const payTo = (await as(holder, 'POST', '/wallets', { chain: 'solana' })).body.address as string;
    const buyer = await generateKeyPairSigner();
    await as(holder, 'POST', '/faucet', { address: payTo, amount: 0.01, token: 'USDC' });
    await as(holder, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const feePayer = gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    const requirements = svmExactRequirements(chain, { amount: '20000', payTo, feePayer });
    const paymentPayload = await svmPayload(chain, buyer, requirements);
    pump(false);
    const pending = await as(seller, 'POST', '/facilitator/settle', {
      x402Version: 2,
      paymentPayload,
      paymentRequirements: requirements,
    });
    assert.deepEqual([pending.body.success, pending.body.errorReason], [false, 'settlement_pending']);
    const open = (await gw.store.settlements.listOpen(Date.now(), 50)).find(
      (s) => s.transactionId === pending.body.transaction,
    );
    // Stored with the claim: who asked, and the worst case reserved (2 signatures + 20,000 CU at 1 µlamport).
    assert.equal(open?.accountId, seller.accountId);
    assert.equal(open?.sponsoredFee?.amount, 10_001n);
    const day = open?.sponsoredFee?.day ?? '';
    assert.equal(await gw.store.sponsoredFees.spent(seller.accountId, chain.adapter.info.id, day), 10_001n);

    pump(true);
    const worker = finisher('finisher-asker');
    await new Promise((resolve) => setTimeout(resolve, SETTLE_WAIT_MS));
    let row = await gw.store.settlements.get(open?.key ?? '');
    for (let i = 0; i < 80 && row?.status !== 'settled'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      await worker.runOnce();
      row = await gw.store.settlements.get(open?.key ?? '');
    }
    assert.equal(row?.status, 'settled');
    const seen = await as(seller, 'GET', `/payment/history/${payTo}`);
    assert.equal(seen.body.total, 1);
    assert.equal(seen.body.payments[0].paymentId, row?.paymentId);
    assert.equal((await as(holder, 'GET', `/payment/history/${payTo}`)).body.total, 0);
    assert.equal((await as(holder, 'GET', `/payment/status/${row?.paymentId}`)).status, 404);
    assert.deepEqual(await gw.store.events.listAfter(holder.accountId, 0, 100), []);
    // The fee the fee payer paid, as the chain reports it, is what the seller's budget holds.
    const paid = (await chain.adapter.getTransaction(pending.body.transaction))?.fee;
    assert.equal(row?.sponsoredFee?.amount, paid);
    assert.equal(await gw.store.sponsoredFees.spent(seller.accountId, chain.adapter.info.id, day), paid);
    assert.equal(await gw.store.sponsoredFees.spent(holder.accountId, chain.adapter.info.id, day), 0n);
  });

  it('a POST /payment/receive answered settlement_pending, its instance then stopped, is answered the payment the finisher settled when retried with its Idempotency-Key; another key or none is refused', async () => {
    // The instance that stays up (the one the tests above left, or a new one when this test runs alone).
    gw ??= await start(true);
    const first = await start(false);
    const seller = await first.newCaller('premium');
    const call = async (on: TestGateway, method: 'GET' | 'POST', url: string, payload?: object) =>
      (await callAs(on, seller.key, method, url, payload)).body;
    const wallet = (await call(first, 'POST', '/wallets', { chain: 'solana' })).address as string;
    const buyer = await generateKeyPairSigner();
    await call(first, 'POST', '/faucet', { address: wallet, amount: 0.01, token: 'USDC' });
    await call(first, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const feePayer = first.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    const requirements = svmExactRequirements(chain, { amount: '120000', payTo: wallet, feePayer });
    const body = {
      walletAddress: wallet,
      paymentProof: encodePaymentSignatureHeader(await svmPayload(chain, buyer, requirements)),
      expectedAmount: 0.12,
      asset: 'USDC',
    };
    const receive = (on: TestGateway, key?: string) =>
      callerOf(on).post(
        seller.key,
        '/payment/receive',
        body,
        key === undefined ? {} : { 'idempotency-key': key },
      );

    pump(false);
    const pending = await receive(first, 'receipt-pending-1');
    assert.equal(pending.statusCode, 422, pending.body);
    const { details } = pending.json().error;
    assert.equal(details.paymentProof, 'settlement_pending');
    // Not the key's answer for good: asked again with it, the settlement is looked at again.
    const still = await receive(first, 'receipt-pending-1');
    assert.equal(still.headers['idempotent-replayed'], undefined);
    assert.deepEqual(
      [still.statusCode, still.json().error.details.paymentProof, still.json().error.details.transaction],
      [422, 'settlement_pending', details.transaction],
    );
    await first.close();

    // Nobody settles again: the finisher (on the instance still up) settles it once the chain moves.
    const worker = finisher('finisher-receive');
    await new Promise((resolve) => setTimeout(resolve, SETTLE_WAIT_MS));
    pump(true);
    let history = await call(gw, 'GET', `/payment/history/${wallet}`);
    for (let i = 0; i < 80 && history.total === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      await worker.runOnce();
      history = await call(gw, 'GET', `/payment/history/${wallet}`);
    }
    assert.equal(history.total, 1);
    const [entry] = history.payments;
    assert.equal(entry.signature, details.transaction);

    // The payload presented with another key, or none, is a second purchase: refused.
    for (const key of ['receipt-pending-2', undefined]) {
      const replayed = await receive(gw, key);
      assert.equal(replayed.statusCode, 422, replayed.body);
      assert.deepEqual(
        [replayed.json().error.code, replayed.json().error.details.paymentProof],
        ['INVALID_PAYMENT_PROOF', 'already_used'],
      );
    }
    // The request that was told settlement_pending, retried with its key, is answered that payment.
    const retried = await receive(gw, 'receipt-pending-1');
    assert.equal(retried.statusCode, 200, retried.body);
    assert.deepEqual(
      [
        retried.json().paymentId,
        retried.json().signature,
        retried.json().amountReceived,
        retried.json().sender,
      ],
      [entry.paymentId, details.transaction, 0.12, buyer.address],
    );
    const again = await receive(gw, 'receipt-pending-1');
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.json().paymentId, entry.paymentId);
    assert.equal((await call(gw, 'GET', `/payment/history/${wallet}`)).total, 1);
  });
});

/** What POST /facilitator/settle answers, as far as these tests read it. */
interface SettleAnswer {
  readonly success: boolean;
  readonly errorReason?: string;
  readonly transaction: string;
}

/** The same on EVM: a transferWithAuthorization not mined within the settle's wait, mined later. */
describe('x402 settlement finisher on EVM', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let anvil: ReturnType<typeof createTestClient>;

  before(async () => {
    evm = await startTestEvm();
    anvil = createTestClient({ mode: 'anvil', transport: http(evm.adapter.info.rpcUrl) });
    gw = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: SETTLE_WAIT_MS,
    });
    await gw.services.facilitator.start();
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  const chainReader = () => createPublicClient({ transport: http(evm.adapter.info.rpcUrl) });

  /** A new premium seller: its API key, and its calls answering whole (`api`) or bodies only (`call`). */
  const newSeller = async () => {
    const { key } = await gw.newCaller('premium');
    const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
      callAs(gw, key, method, url, payload);
    const call = async (method: 'GET' | 'POST', url: string, payload?: object) =>
      (await api(method, url, payload)).body;
    return { key, api, call };
  };
  type Seller = Awaited<ReturnType<typeof newSeller>>;

  /** A new seller paid into a wallet the gateway keeps. */
  const sellerWithGatewayWallet = async () => {
    const seller = await newSeller();
    const wallet = (await seller.call('POST', '/wallets', { chain: 'evm' })).address as string;
    return { ...seller, wallet };
  };

  /**
   * A new buyer holding 1 USDC and its signed x402 `exact` payment of `amount` atomic USDC to `payTo`:
   * the payload, the body of a facilitator settle of it, and the key its settlement is stored under.
   * With `permit2` it pays through Permit2, having approved it for the token first.
   */
  const buyerPays = async (
    seller: Seller,
    payment: { amount: string; payTo: string; maxTimeoutSeconds: number; permit2?: boolean },
  ) => {
    const { amount, payTo, maxTimeoutSeconds } = payment;
    const buyer = privateKeyToAccount(generatePrivateKey());
    await seller.call('POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = evmExactRequirements(evm, { amount, payTo, maxTimeoutSeconds });
    if (payment.permit2 === true) {
      // The buyer's one-time approval of Permit2 for the token, as @x402/evm builds it.
      await seller.call('POST', '/faucet', { address: buyer.address, amount: 1 });
      const client = createWalletClient({ account: buyer, transport: http(evm.adapter.info.rpcUrl) });
      const approval = await client.sendTransaction({
        ...createPermit2ApprovalTx(evm.usdc.address as Hex),
        chain: null,
      });
      await chainReader().waitForTransactionReceipt({ hash: approval, pollingInterval: 20 });
      requirements.extra = { assetTransferMethod: 'permit2' };
    }
    const paymentPayload = await evmPayload(buyer, requirements, 'https://shop.example/evm');
    const key = gw.services.facilitator.schemeFor(evm.adapter.info.id)?.settlementKey(paymentPayload.payload);
    assert.ok(key !== undefined);
    const body = { x402Version: 2, paymentPayload, paymentRequirements: requirements };
    return { buyer, paymentPayload, body, key };
  };

  /** Runs `work` while anvil mines no block on its own, so that a settle's transaction waits in the pool. */
  const withoutMining = async <T>(work: () => Promise<T>): Promise<T> => {
    await anvil.setAutomine(false);
    try {
      return await work();
    } finally {
      await anvil.setAutomine(true);
    }
  };

  /** A settle not mined within its wait (it answers `settlement_pending`), then dropped from anvil's pool. */
  const settleThenDropItsTransaction = (seller: Seller, body: object) =>
    withoutMining(async () => {
      const pending: SettleAnswer = await seller.call('POST', '/facilitator/settle', body);
      assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
      await anvil.dropTransaction({ hash: pending.transaction as Hex });
      return pending;
    });

  /** Runs `worker`'s passes (20 at most) until the settlement under `key` is settled or failed; its row. */
  const untilClosed = async (worker: SettlementFinisher, key: string) => {
    let row = await gw.store.settlements.get(key);
    for (let i = 0; i < 20 && row?.status !== 'settled' && row?.status !== 'failed'; i++) {
      await worker.runOnce();
      row = await gw.store.settlements.get(key);
    }
    return row;
  };

  it('settles a transferWithAuthorization mined after its settle gave up waiting', async () => {
    const seller = await sellerWithGatewayWallet();
    const { call, wallet } = seller;
    const { buyer, body } = await buyerPays(seller, {
      amount: '30000',
      payTo: wallet,
      maxTimeoutSeconds: 300,
    });

    const pending: SettleAnswer = await withoutMining(() => call('POST', '/facilitator/settle', body));
    assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
    const worker = new SettlementFinisher({
      store: gw.store,
      facilitator: gw.services.facilitator,
      instanceId: 'evm-finisher',
      settleWaitMs: SETTLE_WAIT_MS,
      leaseMs: 200,
      waitMs: 300,
    });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_WAIT_MS));
    await anvil.mine({ blocks: 1 });
    let history = await call('GET', `/payment/history/${wallet}`);
    for (let i = 0; i < 40 && history.total === 0; i++) {
      await worker.runOnce();
      history = await call('GET', `/payment/history/${wallet}`);
      if (history.total === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.equal(history.total, 1);
    assert.deepEqual(
      [history.payments[0].signature, history.payments[0].amount, history.payments[0].sender],
      [pending.transaction, 0.03, buyer.address],
    );
  });

  /**
   * A settle to a new seller's gateway wallet (by transferWithAuthorization, or by Permit2) whose transaction
   * is not mined within the wait, then dropped from anvil's pool; what the tests go on with.
   */
  const settleThenDrop = async (amount: string, maxTimeoutSeconds: number, method?: 'permit2') => {
    const seller = await sellerWithGatewayWallet();
    const { call, wallet } = seller;
    const { buyer, paymentPayload, body, key } = await buyerPays(seller, {
      amount,
      payTo: wallet,
      maxTimeoutSeconds,
      permit2: method === 'permit2',
    });
    const pending = await settleThenDropItsTransaction(seller, body);
    const feePayer = gw.services.facilitator.supported().signers['eip155:*']?.[0] as Hex;
    // The fee payer's nonce is taken by another transaction: the stored one can never be mined now.
    const replace = async () => {
      await anvil.impersonateAccount({ address: feePayer });
      await anvil.request({
        method: 'eth_sendTransaction',
        params: [{ from: feePayer, to: feePayer, value: '0x0' }],
      } as never);
      await anvil.stopImpersonatingAccount({ address: feePayer });
    };
    return { call, wallet, buyer, body, pending, key, replace, authorization: paymentPayload.payload };
  };
  // Looks at settlements as soon as they are open, instead of after a settle's wait.
  const eagerFinisher = (instanceId: string) =>
    new SettlementFinisher({
      store: gw.store,
      facilitator: gw.services.facilitator,
      instanceId,
      settleWaitMs: SETTLE_WAIT_MS,
      leaseMs: 1,
      waitMs: 300,
      now: () => Date.now() + SETTLE_WAIT_MS + 1_000,
    });
  const tokenAbi = parseAbi([
    'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
    'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
    'function balanceOf(address account) view returns (uint256)',
  ]);
  const readToken = (functionName: 'balanceOf' | 'authorizationState', args: readonly unknown[]) =>
    chainReader().readContract({
      address: evm.usdc.address as Hex,
      abi: tokenAbi,
      functionName,
      args: args as never,
    });

  /** Someone other than the facilitator submits the buyer's signed authorization; its transaction hash. */
  const submitAsStranger = async (authorization: Record<string, unknown>, tipWei?: bigint): Promise<Hex> => {
    const auth = authorization.authorization as Record<string, string>;
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    await anvil.setBalance({ address: stranger, value: 10n ** 18n });
    await anvil.impersonateAccount({ address: stranger });
    const fees =
      tipWei === undefined
        ? {}
        : {
            maxPriorityFeePerGas: `0x${tipWei.toString(16)}`,
            maxFeePerGas: `0x${(tipWei * 2n).toString(16)}`,
          };
    const hash = (await anvil.request({
      method: 'eth_sendTransaction',
      params: [
        {
          from: stranger,
          to: evm.usdc.address as Hex,
          ...fees,
          data: encodeFunctionData({
            abi: tokenAbi,
            functionName: 'transferWithAuthorization',
            args: [
              auth.from as Hex,
              auth.to as Hex,
              BigInt(auth.value ?? ''),
              BigInt(auth.validAfter ?? ''),
              BigInt(auth.validBefore ?? ''),
              auth.nonce as Hex,
              authorization.signature as Hex,
            ],
          }),
        },
      ],
    } as never)) as Hex;
    await anvil.stopImpersonatingAccount({ address: stranger });
    return hash;
  };

  it('a settle whose transaction reverts because another one used the authorization first answers success on that one', async () => {
    const seller = await sellerWithGatewayWallet();
    const { call, wallet } = seller;
    const { buyer, paymentPayload, body, key } = await buyerPays(seller, {
      amount: '35000',
      payTo: wallet,
      maxTimeoutSeconds: 3_600,
    });

    const { answer, carrier } = await withoutMining(async () => {
      const settling: Promise<SettleAnswer> = call('POST', '/facilitator/settle', body);
      while ((await gw.store.settlements.get(key))?.status !== 'submitted')
        await new Promise((resolve) => setTimeout(resolve, 20));
      // A watcher of the pool submits the same authorization with a higher tip: mined first.
      const carrier = await submitAsStranger(paymentPayload.payload, 100n * 10n ** 9n);
      await anvil.mine({ blocks: 1 });
      return { answer: await settling, carrier };
    });
    // The facilitator's own transaction was mined after it, and reverted.
    const signed = (await gw.store.settlements.get(key))?.signedTransaction ?? '';
    const own = keccak256(`0x${Buffer.from(signed, 'base64').toString('hex')}`);
    assert.equal((await chainReader().getTransactionReceipt({ hash: own })).status, 'reverted');
    assert.deepEqual([answer.success, answer.transaction], [true, carrier]);
    const history = await call('GET', `/payment/history/${wallet}`);
    assert.deepEqual(
      history.payments.map((p: { signature: string; amount: number }) => [p.signature, p.amount]),
      [[carrier, 0.035]],
    );
    assert.equal(await readToken('balanceOf', [buyer.address]), 1_000_000n - 35_000n);
  });

  it('settles on the transaction of whoever else submitted the authorization, recording the payment once', async () => {
    const { call, wallet, buyer, body, pending, key, authorization } = await settleThenDrop('40000', 3_600);
    // Someone else (the buyer, a watcher of the pool) submits the same signed authorization.
    const carrier = await submitAsStranger(authorization);
    assert.notEqual(carrier, pending.transaction);

    const worker = eagerFinisher('evm-carried');
    const row = await untilClosed(worker, key);
    assert.deepEqual([row?.status, row?.transactionId], ['settled', carrier]);
    const history = await call('GET', `/payment/history/${wallet}`);
    assert.equal(history.total, 1);
    assert.deepEqual(
      [history.payments[0].paymentId, history.payments[0].signature, history.payments[0].amount],
      [row?.paymentId, carrier, 0.04],
    );
    // Settled: the payload again is a duplicate naming the carrier, and the buyer paid once.
    const again = await call('POST', '/facilitator/settle', body);
    assert.deepEqual(
      [again.success, again.errorReason, again.transaction],
      [false, 'duplicate_settlement', carrier],
    );
    assert.equal(await worker.runOnce(), 0, 'nothing left open');
    assert.equal(await readToken('balanceOf', [buyer.address]), 1_000_000n - 40_000n);
    assert.equal((await call('GET', `/payment/history/${wallet}`)).total, 1);
  });

  /**
   * A seller's local receipt and a facilitator settlement of one authorization; the settlement's own
   * transaction is dropped and the seller's carries it. Whichever looks first records it, once.
   */
  const localReceiptCarries = async (finisherFirst: boolean) => {
    const seller = await newSeller();
    const { api } = seller;
    const sellerWallet = await newWatchedEvmWallet(gw, evm, seller.key);
    const { buyer, paymentPayload, body, key } = await buyerPays(seller, {
      amount: '25000',
      payTo: sellerWallet.address,
      maxTimeoutSeconds: 3_600,
    });
    const receipt = await api('POST', '/transaction/receive', {
      walletAddress: sellerWallet.address,
      paymentProof: encodePaymentSignatureHeader(paymentPayload),
      expectedAmount: 0.025,
      asset: 'USDC',
    });
    assert.equal(receipt.status, 200, JSON.stringify(receipt.body));
    await settleThenDropItsTransaction(seller, body);
    // The seller's own transaction carries the authorization.
    const carrier = await signAndBroadcastEvm(
      evm.adapter.info.rpcUrl,
      receipt.body.transaction,
      sellerWallet.privateKey,
    );
    const reconciler = handReconciler(gw, 'evm-local-receipt');
    const reconcile = () =>
      untilNotPending(reconciler, () => api('GET', `/payment/status/${receipt.body.paymentId}`), 50);
    const worker = eagerFinisher('evm-local-receipt');
    const finish = () => untilClosed(worker, key);
    const [status, row] = finisherFirst
      ? await finish().then(async (r) => [await reconcile(), r] as const)
      : await reconcile().then(async (r) => [r, await finish()] as const);
    assert.deepEqual([row?.status, row?.transactionId], ['settled', carrier]);
    // The payment is the settlement's when it looked first, else the receipt's; the other one fails.
    const recorder = finisherFirst ? row?.paymentId : receipt.body.paymentId;
    assert.equal(row?.paymentId, recorder);
    assert.equal(status.status, finisherFirst ? 'failed' : 'confirmed');
    const history = (await api('GET', `/payment/history/${sellerWallet.address}`)).body;
    const received = history.payments
      .filter((p: { signature: string }) => p.signature === carrier)
      .map((p: { paymentId: string; status: string }) => [p.paymentId, p.status]);
    if (finisherFirst) {
      assert.deepEqual(
        received.sort(),
        [
          [receipt.body.paymentId, 'failed'],
          [recorder, 'confirmed'],
        ].sort(),
      );
    } else {
      assert.deepEqual(received, [[recorder, 'confirmed']], 'the settlement records no second payment');
    }
    assert.equal(await readToken('balanceOf', [buyer.address]), 1_000_000n - 25_000n);
  };

  it('a seller’s local receipt carries the authorization of a dropped settlement; the finisher looks first: one payment', () =>
    localReceiptCarries(true));

  it('a seller’s local receipt carries the authorization of a dropped settlement; the reconciler looks first: one payment', () =>
    localReceiptCarries(false));

  it('fails a settlement whose transaction was never mined once a block passes validBefore with the authorization unused', async () => {
    const { call, wallet, buyer, pending, key, replace, authorization } = await settleThenDrop('50000', 120);
    await replace();

    const worker = eagerFinisher('evm-never');
    await worker.runOnce();
    await worker.runOnce();
    // Before validBefore someone else could still submit the authorization: it stays open.
    assert.equal((await gw.store.settlements.get(key))?.status, 'submitted');

    const auth = authorization.authorization as Record<string, string>;
    await anvil.increaseTime({ seconds: 180 });
    await anvil.mine({ blocks: 1 });
    const row = await untilClosed(worker, key);
    assert.equal(row?.status, 'failed');
    assert.match(row?.error ?? '', /never mined/);
    assert.deepEqual([row?.paymentId, row?.transactionId], [null, pending.transaction]);
    assert.equal(await readToken('authorizationState', [auth.from, auth.nonce]), false);
    assert.equal(await readToken('balanceOf', [buyer.address]), 1_000_000n);
    assert.equal((await call('GET', `/payment/history/${wallet}`)).total, 0);
    assert.equal(await worker.runOnce(), 0, 'nothing left open');
  });

  // After the EIP-3009 one: the chain's clock is ahead of the gateway's from here on.
  it('fails a Permit2 settlement never mined once a block passes the permit’s deadline with its nonce unspent', async () => {
    const { call, wallet, buyer, pending, key, replace, authorization } = await settleThenDrop(
      '45000',
      600,
      'permit2',
    );
    assert.match(key, /:exact:permit2:/, 'settled through x402’s Permit2 proxy');
    await replace();
    const worker = eagerFinisher('evm-permit2-never');
    await worker.runOnce();
    await worker.runOnce();
    assert.equal((await gw.store.settlements.get(key))?.status, 'submitted');

    const permit = authorization.permit2Authorization as { from: Hex; nonce: string };
    await anvil.increaseTime({ seconds: 900 });
    await anvil.mine({ blocks: 1 });
    const row = await untilClosed(worker, key);
    assert.equal(row?.status, 'failed');
    assert.match(row?.error ?? '', /never mined/);
    assert.deepEqual([row?.paymentId, row?.transactionId], [null, pending.transaction]);
    const bitmap = await chainReader().readContract({
      address: PERMIT2_ADDRESS,
      abi: parseAbi(['function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)']),
      functionName: 'nonceBitmap',
      args: [permit.from, BigInt(permit.nonce) >> 8n],
    });
    assert.equal((bitmap >> (BigInt(permit.nonce) & 0xffn)) & 1n, 0n, 'the permit’s nonce is unspent');
    assert.equal(await readToken('balanceOf', [buyer.address]), 1_000_000n);
    assert.equal((await call('GET', `/payment/history/${wallet}`)).total, 0);
  });

  /** The call of the proxy's settle in the transaction the gateway signed for the settlement under `key`. */
  const gatewaySettleCall = async (key: string): Promise<Hex> => {
    const signed = (await gw.store.settlements.get(key))?.signedTransaction ?? '';
    const own = parseTransaction(bytesToHex(Buffer.from(signed, 'base64')));
    assert.equal(getAddress(own.to ?? '0x'), EXACT_PERMIT2_PROXY_ADDRESS);
    return own.data ?? '0x';
  };

  /**
   * A stranger sends `settleCall` (a call of the proxy's settle) through a wrapper contract, the test
   * forwarder, which passes it on verbatim: the settle call starts at byte 20 of the carrier's input, not
   * at 0. Its transaction hash, mined.
   */
  const settleThroughWrapper = async (settleCall: Hex): Promise<Hex> => {
    const forwarder = await deployForwarder(evm.adapter.info.rpcUrl);
    const stranger = privateKeyToAccount(generatePrivateKey());
    await anvil.setBalance({ address: stranger.address, value: 10n ** 18n });
    const hash = await createWalletClient({
      account: stranger,
      transport: http(evm.adapter.info.rpcUrl),
    }).sendTransaction({
      to: forwarder,
      data: forwardedCall(EXACT_PERMIT2_PROXY_ADDRESS, settleCall),
      chain: null,
    });
    const receipt = await chainReader().waitForTransactionReceipt({ hash, pollingInterval: 20 });
    assert.deepEqual([receipt.status, getAddress(receipt.to ?? '0x')], ['success', getAddress(forwarder)]);
    return hash;
  };

  /** Moves the chain's clock a minute past `deadline` (Unix seconds) and mines a block stamped there. */
  const passDeadline = async (deadline: bigint) => {
    const before = await chainReader().getBlock({ blockTag: 'latest' });
    await anvil.increaseTime({ seconds: Number(deadline - before.timestamp) + 60 });
    await anvil.mine({ blocks: 1 });
    const past = await chainReader().getBlock({ blockTag: 'latest' });
    assert.ok(past.timestamp > deadline, 'a block past the permit’s deadline exists');
  };

  /** The settlement under `key` is settled on `carrier`, its payment recorded once, the buyer debited once. */
  const assertSettledOnceOn = async (
    settled: Pick<Awaited<ReturnType<typeof settleThenDrop>>, 'call' | 'wallet' | 'buyer' | 'body' | 'key'>,
    carrier: Hex,
    worker: SettlementFinisher,
    amount: { atomic: bigint; usdc: number },
  ) => {
    const { call, wallet, buyer, body, key } = settled;
    const row = await untilClosed(worker, key);
    assert.deepEqual([row?.status, row?.error, row?.transactionId], ['settled', null, carrier]);
    const history = await call('GET', `/payment/history/${wallet}`);
    assert.equal(history.total, 1);
    assert.deepEqual(
      [history.payments[0].paymentId, history.payments[0].signature, history.payments[0].amount],
      [row?.paymentId, carrier, amount.usdc],
    );
    const again = await call('POST', '/facilitator/settle', body);
    assert.deepEqual(
      [again.success, again.errorReason, again.transaction],
      [false, 'duplicate_settlement', carrier],
    );
    assert.equal(await worker.runOnce(), 0, 'nothing left open');
    assert.equal(await readToken('balanceOf', [buyer.address]), 1_000_000n - amount.atomic);
    assert.equal((await call('GET', `/payment/history/${wallet}`)).total, 1);
  };

  /**
   * A dropped Permit2 settlement of `atomic` USDC units that a stranger carried through a wrapper; the
   * finisher first looks at it before its deadline, or `pastDeadline`, once the chain is past it.
   */
  const wrappedSettlementFinished = async (atomic: bigint, pastDeadline: boolean, finisher: string) => {
    const dropped = await settleThenDrop(String(atomic), 3_600, 'permit2');
    await dropped.replace();
    const carrier = await settleThroughWrapper(await gatewaySettleCall(dropped.key));
    assert.notEqual(carrier, dropped.pending.transaction);
    if (pastDeadline) {
      const { deadline } = dropped.authorization.permit2Authorization as { deadline: string };
      await passDeadline(BigInt(deadline));
    }
    await assertSettledOnceOn(dropped, carrier, eagerFinisher(finisher), {
      atomic,
      usdc: Number(atomic) / 1_000_000,
    });
  };

  // After the Permit2 one above, with a deadline far enough ahead of the chain's clock, moved by then.
  it('settles a Permit2 permit a stranger carried through a wrapper contract, recording the payment once', () =>
    wrappedSettlementFinished(42_000n, false, 'evm-permit2-wrapped'));

  // It moves the chain's clock past the permit's deadline.
  it('settles a Permit2 permit a stranger carried through a wrapper contract when first looked at past its deadline', () =>
    wrappedSettlementFinished(43_000n, true, 'evm-permit2-wrapped-late'));

  // Last, with a deadline beyond the clock moves above; it moves the clock past that deadline.
  it('fails a dropped Permit2 settlement whose nonce the buyer revoked, though a wrapper carried another permit paying the same', async () => {
    const dropped = await settleThenDrop('44000', 7_200, 'permit2');
    await dropped.replace();
    const permit = dropped.authorization.permit2Authorization as { nonce: string; deadline: string };
    // The same buyer's second permit of the same amount to the same seller (another nonce), carried by a
    // stranger's wrapper: its Transfer is the one a search by amount finds.
    const other = await evmPayload(
      dropped.buyer,
      dropped.body.paymentRequirements,
      'https://shop.example/evm',
    );
    const otherPermit = permit2AuthorizationOf(other.payload);
    assert.ok(otherPermit !== undefined && otherPermit.nonce !== BigInt(permit.nonce));
    await settleThroughWrapper(permit2SettleCall(otherPermit).data);
    // The buyer revokes the first permit's nonce: it is spent, but by no settle.
    const nonce = BigInt(permit.nonce);
    const revoke = await createWalletClient({
      account: dropped.buyer,
      transport: http(evm.adapter.info.rpcUrl),
    }).writeContract({
      address: PERMIT2_ADDRESS,
      abi: parseAbi(['function invalidateUnorderedNonces(uint256 wordPos, uint256 mask)']),
      functionName: 'invalidateUnorderedNonces',
      args: [nonce >> 8n, 1n << (nonce & 0xffn)],
      chain: null,
    });
    await chainReader().waitForTransactionReceipt({ hash: revoke, pollingInterval: 20 });
    const bitmap = await chainReader().readContract({
      address: PERMIT2_ADDRESS,
      abi: parseAbi(['function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)']),
      functionName: 'nonceBitmap',
      args: [dropped.buyer.address, nonce >> 8n],
    });
    assert.equal((bitmap >> (nonce & 0xffn)) & 1n, 1n, 'the permit’s nonce is spent');
    await passDeadline(BigInt(permit.deadline));

    const row = await untilClosed(eagerFinisher('evm-permit2-revoked'), dropped.key);
    assert.equal(row?.status, 'failed');
    assert.match(row?.error ?? '', /never mined/);
    assert.deepEqual([row?.paymentId, row?.transactionId], [null, dropped.pending.transaction]);
    assert.equal((await dropped.call('GET', `/payment/history/${dropped.wallet}`)).total, 0);
    assert.equal(await readToken('balanceOf', [dropped.buyer.address]), 1_000_000n - 44_000n);
  });
});
