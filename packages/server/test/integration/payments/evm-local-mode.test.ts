import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bytesToHex, getAddress, type Hex, parseTransaction, serializeTransaction } from 'viem';
import { decodeTransferNote } from '../../../src/chains/evm/transfer-calldata.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import {
  type EvmLocalWallet,
  newEvmLocalWallet,
  signAndBroadcastEvm,
  signEvm,
} from '../../support/evm-local-signer.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from '../../support/evm-payment-fixture.ts';
import { lastCharacterChanged } from '../../support/last-character-changed.ts';
import { watchAddress } from '../../support/proof-of-control.ts';

const PAYMENT_ID = /^pay_[0-9A-HJKMNP-TV-Z]{26}$/;
const NETWORK = 'eip155:31337';

/**
 * Local transaction mode on anvil: the caller's wallet is one the gateway never holds a key for. The
 * test signs the unsigned EIP-1559 transaction with viem and broadcasts it to anvil itself, as a caller
 * with its own RPC endpoint would; the reconciler finds it by its reference.
 */
describe('local transaction mode on EVM (anvil): /transaction/send, /transaction/receive, verification', () => {
  let f: EvmPaymentFixture;
  let buyer: { accountId: string; key: string };
  let payer: EvmLocalWallet;
  let seller: EvmParty;
  let reconciler: PaymentReconciler;

  before(async () => {
    f = await startEvmPaymentFixture();
    buyer = await f.gw.newCaller();
    payer = newEvmLocalWallet();
    await f.chain.faucet?.fundNative(payer.address, 20n * ETH);
    seller = await f.party();
    reconciler = f.reconciler('evm-local-worker');
  });
  after(() => f.close());

  const build = (body: Record<string, unknown>, headers?: Record<string, string>) =>
    f.post(buyer.key, '/transaction/send', { walletAddress: payer.address, ...body }, headers);
  const status = async (key: string, paymentId: string) =>
    (await f.get(key, `/payment/status/${paymentId}`)).json();
  const broadcast = (transaction: string, privateKey = payer.privateKey) =>
    signAndBroadcastEvm(f.evm.anvil.rpcUrl, transaction, privateKey);

  it('builds an unsigned EIP-1559 transaction; signed with viem and broadcast by the caller, it confirms', async () => {
    const before = Date.now();
    const height = await f.chain.getBlockHeight();
    const nonce = await f.anvil.getTransactionCount({ address: payer.address as Hex, blockTag: 'pending' });
    // Asked in lower case: stored, proven and matched on chain in checksum case.
    const res = await build({
      walletAddress: payer.address.toLowerCase(),
      recipientAddress: seller.wallet.toLowerCase(),
      amount: 0.25,
      resource: 'https://api.example.com/report',
      metadata: { referenceId: 'order-9' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const b = res.json();
    assert.match(b.paymentId, PAYMENT_ID);
    assert.equal(b.status, 'pending');
    assert.equal(b.amount, 0.25);
    assert.equal(b.recipient, seller.wallet);
    assert.equal(b.network, NETWORK);
    assert.equal(b.lastValidBlockHeight, Number(height) + 150);
    assert.ok(b.expiresAt >= before + 60_000 && b.expiresAt <= Date.now() + 60_000, String(b.expiresAt));
    assert.match(b.reference, /^0x[0-9a-fA-F]{40}$/);

    const tx = parseTransaction(bytesToHex(Buffer.from(b.transaction, 'base64')));
    assert.equal(tx.type, 'eip1559');
    assert.equal(tx.chainId, 31337);
    assert.equal(tx.to && getAddress(tx.to), seller.wallet);
    assert.equal(tx.value, ETH / 4n, 'exactly 0.25 ETH in wei');
    assert.equal(tx.nonce, nonce, "the sender's next nonce");
    assert.equal(tx.r, undefined, 'unsigned');
    assert.ok((tx.maxFeePerGas ?? 0n) >= (tx.maxPriorityFeePerGas ?? 0n));
    assert.deepEqual(decodeTransferNote(tx.data ?? '0x'), { reference: b.reference, memo: b.paymentId });

    const check = await f.gw.services.proofs.check(b.paymentProof);
    assert.ok(check.valid);
    const { kid: _kid, iat: _iat, ...claims } = check.claims;
    assert.deepEqual(claims, {
      v: 1,
      pid: b.paymentId,
      net: NETWORK,
      ref: b.reference,
      from: payer.address,
      to: seller.wallet,
      amt: '250000000000000000',
      res: 'https://api.example.com/report',
    });

    await reconciler.runOnce();
    const pending = await status(buyer.key, b.paymentId);
    assert.equal(pending.status, 'pending');
    assert.equal(pending.signature, null);

    const sellerBefore = await f.chain.getBalance(seller.wallet);
    const hash = await broadcast(b.transaction);
    await reconciler.runOnce();
    const receipt = await f.anvil.getTransactionReceipt({ hash });
    const confirmed = await status(buyer.key, b.paymentId);
    assert.deepEqual(
      { ...confirmed, timestamp: 0 },
      {
        paymentId: b.paymentId,
        type: 'sent',
        network: NETWORK,
        signature: hash,
        status: 'confirmed',
        amount: 0.25,
        sender: payer.address,
        recipient: seller.wallet,
        resource: 'https://api.example.com/report',
        blockHeight: Number(receipt.blockNumber),
        confirmations: confirmed.confirmations,
        timestamp: 0,
        metadata: { referenceId: 'order-9' },
        asset: { symbol: 'ETH', address: null, decimals: 18 },
      },
    );
    assert.equal(await f.chain.getBalance(seller.wallet), sellerBefore + ETH / 4n);

    // History finds it under the payer's address in any case, like the payment's own wallet.
    const history = (await f.get(buyer.key, `/payment/history/${payer.address.toLowerCase()}`)).json();
    assert.equal(history.total, 1);
    assert.deepEqual(history.payments[0], {
      paymentId: b.paymentId,
      type: 'sent',
      amount: 0.25,
      recipient: seller.wallet,
      resource: 'https://api.example.com/report',
      status: 'confirmed',
      timestamp: history.payments[0].timestamp,
      signature: hash,
      network: NETWORK,
      asset: { symbol: 'ETH', address: null, decimals: 18 },
    });

    // anvil calls a block finalized 64 blocks deep.
    await f.anvil.mine({ blocks: 64 });
    await reconciler.runOnce();
    // The status read caches the chain's height for 400 ms.
    await new Promise((resolve) => setTimeout(resolve, 450));
    const finalized = await status(buyer.key, b.paymentId);
    assert.equal(finalized.status, 'finalized');
    assert.equal(finalized.confirmations, 65, 'its own block and the 64 mined on top');
    const events = (await f.gw.store.events.listAfter(buyer.accountId, 0, 100))
      .filter((e) => e.paymentId === b.paymentId)
      .map((e) => e.type);
    assert.deepEqual(events, ['payment.confirmed', 'payment.finalized']);
  });

  it('finds the transaction when the caller re-signs it with another nonce and fees', async () => {
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.001 })).json();
    const tx = parseTransaction(bytesToHex(Buffer.from(b.transaction, 'base64')));
    assert.equal(tx.type, 'eip1559');
    // Another transaction of the caller's took the nonce first: the caller signs the next one instead.
    await broadcast((await build({ recipientAddress: seller.wallet, amount: 0.002 })).json().transaction);
    const moved = serializeTransaction({
      ...tx,
      nonce: (tx.nonce ?? 0) + 1,
      maxPriorityFeePerGas: (tx.maxPriorityFeePerGas ?? 0n) + 1n,
      maxFeePerGas: (tx.maxFeePerGas ?? 0n) + 1n,
    });
    const hash = await broadcast(Buffer.from(moved.slice(2), 'hex').toString('base64'));
    await reconciler.runOnce();
    const seen = await status(buyer.key, b.paymentId);
    assert.equal(seen.status, 'confirmed');
    assert.equal(seen.signature, hash);
  });

  /** A worker whose clock is 61 s ahead: past expiresAt, still within lastValidBlockHeight. */
  const lateReconciler = () =>
    new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      instanceId: 'evm-local-late',
      recheckMs: 0,
      lateLandingRecheckMs: 0,
      now: () => Date.now() + 61_000,
    });
  const eventsOf = async (paymentId: string) =>
    (await f.gw.store.events.listAfter(buyer.accountId, 0, 1000))
      .filter((e) => e.paymentId === paymentId)
      .map((e) => e.type);

  it('expires a transaction never broadcast: by block height, and by expiresAt', async () => {
    const byHeight = (await build({ recipientAddress: seller.wallet, amount: 0.5 })).json();
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, byHeight.paymentId)).status, 'pending');
    await f.anvil.mine({ blocks: 151 });
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, byHeight.paymentId)).status, 'expired');
    assert.deepEqual(await eventsOf(byHeight.paymentId), ['payment.expired']);

    const byTime = (await build({ recipientAddress: seller.wallet, amount: 0.6 })).json();
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, byTime.paymentId)).status, 'pending');
    await lateReconciler().runOnce();
    const expired = await status(buyer.key, byTime.paymentId);
    assert.equal(expired.status, 'expired');
    assert.equal(expired.signature, null);
    assert.deepEqual(await eventsOf(byTime.paymentId), ['payment.expired']);
  });

  it('does not expire a transaction broadcast in time that is mined after expiresAt', async () => {
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.007 })).json();
    // A busy chain: the transaction waits in the pool past expiresAt.
    await f.anvil.setAutomine(false);
    try {
      const hash = await f.anvil.sendRawTransaction({
        serializedTransaction: await signEvm(b.transaction, payer.privateKey),
      });
      const late = lateReconciler();
      await late.runOnce();
      assert.equal((await status(buyer.key, b.paymentId)).status, 'pending', 'waiting in the pool');
      await f.anvil.mine({ blocks: 1 });
      await late.runOnce();
      const seen = await status(buyer.key, b.paymentId);
      assert.equal(seen.status, 'confirmed');
      assert.equal(seen.signature, hash);
      assert.deepEqual(await eventsOf(b.paymentId), ['payment.confirmed']);
    } finally {
      await f.anvil.setAutomine(true);
    }
  });

  it('confirms a transaction mined after it was called expired: payment.confirmed follows payment.expired', async () => {
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.008 })).json();
    const late = lateReconciler();
    await late.runOnce();
    const expired = await status(buyer.key, b.paymentId);
    assert.equal(expired.status, 'expired', 'past expiresAt, nothing waiting in the pool');
    // The caller broadcasts anyway: nothing on EVM refuses signed bytes whose nonce is still unused.
    const hash = await broadcast(b.transaction);
    await late.runOnce();
    const confirmed = await status(buyer.key, b.paymentId);
    assert.equal(confirmed.status, 'confirmed');
    assert.equal(confirmed.signature, hash);
    const receipt = await f.anvil.getTransactionReceipt({ hash });
    assert.equal(confirmed.blockHeight, Number(receipt.blockNumber));
    const events = (await f.gw.store.events.listAfter(buyer.accountId, 0, 1000)).filter(
      (e) => e.paymentId === b.paymentId,
    );
    assert.deepEqual(
      events.map((e) => [e.type, e.data.status]),
      [
        ['payment.expired', 'expired'],
        ['payment.confirmed', 'confirmed'],
      ],
    );
    const record = await f.gw.store.payments.get(b.paymentId);
    assert.equal(record?.error, null, 'the expiry note is gone');

    await f.anvil.mine({ blocks: 64 });
    await late.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'finalized');
    assert.deepEqual(await eventsOf(b.paymentId), [
      'payment.expired',
      'payment.confirmed',
      'payment.finalized',
    ]);
    const redeemed = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: b.paymentProof,
      expectedAmount: 0.008,
    });
    assert.equal(redeemed.statusCode, 200, redeemed.body);
    assert.equal(redeemed.json().signature, hash);
  });

  it('stops looking for a late transaction once the watch after expiry is over', async () => {
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.009 })).json();
    await lateReconciler().runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'expired');
    await broadcast(b.transaction);
    const muchLater = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      instanceId: 'evm-local-much-later',
      recheckMs: 0,
      lateLandingRecheckMs: 0,
      lateLandingWatchMs: 60_000,
      now: () => Date.now() + 121_000,
    });
    await muchLater.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'expired', 'no longer watched');
    await lateReconciler().runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'confirmed', 'still within 10 minutes');
  });

  it('never confirms a tampered copy that reuses the reference with another amount or recipient', async () => {
    const thief = newEvmLocalWallet().address;
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.01 })).json();
    for (const [to, amount] of [
      [thief, ETH / 100n],
      [seller.wallet, ETH / 1000n],
    ] as const) {
      const forged = await f.chain.prepareTransfer({
        from: payer.address,
        to,
        amount,
        memo: b.paymentId,
        reference: b.reference,
      });
      await broadcast(Buffer.from(forged.unsigned).toString('base64'));
    }
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'pending');
    const receive = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: b.paymentProof,
      expectedAmount: 0.001,
      timeout: 1,
    });
    assert.equal(receive.statusCode, 422);
    assert.deepEqual(receive.json().error.details, { paymentProof: 'not_found' });
  });

  it('refuses bad requests and a payer that cannot pay, before recording anything', async () => {
    const cases: [Record<string, unknown>, string, Record<string, string>][] = [
      [
        { recipientAddress: seller.wallet, amount: 0.0009 },
        'INVALID_PARAMETERS',
        { amount: 'must be between 0.001 and 100' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, priorityFee: 0.1 },
        'INVALID_PARAMETERS',
        { priorityFee: 'must be between 0.00001 and 0.01' },
      ],
      [
        { recipientAddress: '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin', amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'must be a evm address' },
      ],
      [
        { recipientAddress: payer.address.toLowerCase(), amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'must differ from walletAddress' },
      ],
      [
        { recipientAddress: caseOfOneLetterSwapped(seller.wallet), amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'mixes upper and lower case, but not as its EIP-55 checksum does' },
      ],
      [
        { walletAddress: '0x1234', recipientAddress: seller.wallet, amount: 1 },
        'INVALID_PARAMETERS',
        { walletAddress: 'must be a Solana (base58) or EVM (0x…) address' },
      ],
    ];
    for (const [body, code, details] of cases) {
      const res = await build(body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.code, code, JSON.stringify(body));
      assert.deepEqual(res.json().error.details, details, JSON.stringify(body));
    }
    const poor = newEvmLocalWallet();
    const res = await build({ walletAddress: poor.address, recipientAddress: seller.wallet, amount: 1 });
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
    // Nothing was recorded: the account has no payment from that address, which is not its wallet.
    const history = await f.get(buyer.key, `/payment/history/${poor.address}`);
    assert.equal(history.statusCode, 403, history.body);
  });

  it('answers a retried build with the same Idempotency-Key with the same transaction', async () => {
    const body = { recipientAddress: seller.wallet, amount: 0.003 };
    const first = await build(body, { 'idempotency-key': 'evm-local-1' });
    const again = await build(body, { 'idempotency-key': 'evm-local-1' });
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(again.json(), first.json());
  });

  describe('/transaction/receive on EVM: the seller signs a receipt with its own key', () => {
    let shop: { accountId: string; key: string };
    let shopWallet: EvmLocalWallet;

    before(async () => {
      shop = await f.gw.newCaller();
      shopWallet = newEvmLocalWallet();
      const watched = await watchAddress(f.gw, shop.key, shopWallet, {
        spelling: shopWallet.address.toLowerCase(),
      });
      assert.equal(watched.statusCode, 200, watched.body);
      assert.equal(watched.json().address, shopWallet.address);
      await f.chain.faucet?.fundNative(shopWallet.address, ETH);
    });

    /** A local-mode payment to the shop, signed and landed. */
    async function paidShop(amount: number) {
      const b = (await build({ recipientAddress: shopWallet.address, amount })).json();
      const signature = await broadcast(b.transaction);
      return { ...b, signature } as { paymentId: string; paymentProof: string; signature: Hex };
    }
    const receiveLocally = (proof: string, body: Record<string, unknown> = {}) =>
      f.post(shop.key, '/transaction/receive', {
        walletAddress: shopWallet.address,
        paymentProof: proof,
        expectedAmount: 0.05,
        timeout: 1,
        ...body,
      });

    it('consumes the proof when the receipt lands, not before; every later attempt is refused', async () => {
      const paid = await paidShop(0.05);
      const res = await receiveLocally(paid.paymentProof, {
        walletAddress: shopWallet.address.toLowerCase(),
      });
      assert.equal(res.statusCode, 200, res.body);
      const r = res.json();
      assert.equal(r.verified, true);
      assert.match(r.paymentId, PAYMENT_ID);
      assert.equal(r.status, 'pending');
      assert.equal(r.signature, paid.signature);
      assert.equal(r.amountReceived, 0.05);
      assert.equal(r.sender, payer.address);
      assert.equal(r.network, NETWORK);
      const receipt = parseTransaction(bytesToHex(Buffer.from(r.transaction, 'base64')));
      assert.equal(receipt.type, 'eip1559');
      assert.equal(receipt.to && getAddress(receipt.to), shopWallet.address, 'a transfer to itself');
      assert.equal(receipt.value ?? 0n, 0n, 'of nothing');
      assert.deepEqual(decodeTransferNote(receipt.data ?? '0x'), {
        reference: r.reference,
        memo: `gate402 receipt ${r.paymentId} accepts ${paid.paymentId}`,
      });

      // Not consumed yet: verification still says yes.
      const verify = await f.post(shop.key, '/v1/payments/verify', {
        payment_proof: Buffer.from(paid.paymentProof).toString('base64'),
        amount: 50_000_000_000_000_000,
        recipient: shopWallet.address,
      });
      assert.deepEqual(verify.json(), {
        verified: true,
        transaction_id: paid.signature,
        network: NETWORK,
        asset: { symbol: 'ETH', address: null, decimals: 18 },
      });

      await reconciler.runOnce();
      assert.equal((await status(shop.key, r.paymentId)).status, 'pending', 'no receipt on chain yet');
      await broadcast(r.transaction, shopWallet.privateKey);
      await reconciler.runOnce();
      const seen = await status(shop.key, r.paymentId);
      assert.equal(seen.status, 'confirmed');
      assert.equal(seen.type, 'received');
      assert.equal(seen.signature, paid.signature);
      assert.equal(seen.sender, payer.address);
      assert.equal(seen.recipient, shopWallet.address);
      const history = (await f.get(shop.key, `/payment/history/${shopWallet.address}`)).json();
      assert.deepEqual(
        history.payments.map((p: { paymentId: string; status: string }) => [p.paymentId, p.status]),
        [[r.paymentId, 'confirmed']],
      );

      for (const again of [
        await receiveLocally(paid.paymentProof),
        await f.post(shop.key, '/payment/receive', {
          walletAddress: shopWallet.address,
          paymentProof: paid.paymentProof,
          expectedAmount: 0.05,
        }),
      ]) {
        assert.equal(again.statusCode, 422, again.body);
        assert.equal(again.json().error.code, 'INVALID_PAYMENT_PROOF');
        assert.deepEqual(again.json().error.details, { paymentProof: 'already_used' });
      }
      const replayed = await f.post(shop.key, '/v1/payments/verify', {
        payment_proof: Buffer.from(paid.paymentProof).toString('base64'),
        amount: 1,
        recipient: shopWallet.address,
      });
      assert.equal(replayed.json().verified, false);
      assert.equal(replayed.json().reason, 'already_used');
    });

    it('leaves the proof redeemable when the receipt expires unsent', async () => {
      const paid = await paidShop(0.05);
      const r = (await receiveLocally(paid.paymentProof)).json();
      await f.anvil.mine({ blocks: 151 });
      await reconciler.runOnce();
      assert.equal((await status(shop.key, r.paymentId)).status, 'expired');
      const redeemed = await f.post(shop.key, '/payment/receive', {
        walletAddress: shopWallet.address,
        paymentProof: paid.paymentProof,
        expectedAmount: 0.05,
      });
      assert.equal(redeemed.statusCode, 200, redeemed.body);
      assert.equal(redeemed.json().signature, paid.signature);
    });

    it('does not expire a receipt broadcast in time that is mined after expiresAt', async () => {
      const paid = await paidShop(0.05);
      const r = (await receiveLocally(paid.paymentProof)).json();
      await f.anvil.setAutomine(false);
      try {
        await f.anvil.sendRawTransaction({
          serializedTransaction: await signEvm(r.transaction, shopWallet.privateKey),
        });
        const late = lateReconciler();
        await late.runOnce();
        assert.equal((await status(shop.key, r.paymentId)).status, 'pending', 'waiting in the pool');
        await f.anvil.mine({ blocks: 1 });
        await late.runOnce();
        assert.equal((await status(shop.key, r.paymentId)).status, 'confirmed');
      } finally {
        await f.anvil.setAutomine(true);
      }
      const again = await receiveLocally(paid.paymentProof);
      assert.deepEqual(again.json().error.details, { paymentProof: 'already_used' });
    });

    it('confirms a receipt mined after it was called expired, consuming the proof then', async () => {
      const paid = await paidShop(0.05);
      const r = (await receiveLocally(paid.paymentProof)).json();
      const late = lateReconciler();
      await late.runOnce();
      assert.equal((await status(shop.key, r.paymentId)).status, 'expired', 'not broadcast in time');
      await signAndBroadcastEvm(f.evm.anvil.rpcUrl, r.transaction, shopWallet.privateKey);
      await late.runOnce();
      assert.equal((await status(shop.key, r.paymentId)).status, 'confirmed');
      const events = (await f.gw.store.events.listAfter(shop.accountId, 0, 1000))
        .filter((e) => e.paymentId === r.paymentId)
        .map((e) => e.type);
      assert.deepEqual(events, ['payment.expired', 'payment.confirmed']);
      const again = await f.post(shop.key, '/payment/receive', {
        walletAddress: shopWallet.address,
        paymentProof: paid.paymentProof,
        expectedAmount: 0.05,
      });
      assert.deepEqual(again.json().error.details, { paymentProof: 'already_used' });
    });

    it('leaves a late receipt expired when the proof was redeemed after the expiry', async () => {
      const paid = await paidShop(0.05);
      const r = (await receiveLocally(paid.paymentProof)).json();
      const late = lateReconciler();
      await late.runOnce();
      assert.equal((await status(shop.key, r.paymentId)).status, 'expired');
      const redeemed = await f.post(shop.key, '/payment/receive', {
        walletAddress: shopWallet.address,
        paymentProof: paid.paymentProof,
        expectedAmount: 0.05,
      });
      assert.equal(redeemed.statusCode, 200, redeemed.body);
      await signAndBroadcastEvm(f.evm.anvil.rpcUrl, r.transaction, shopWallet.privateKey);
      await late.runOnce();
      const receipt = await status(shop.key, r.paymentId);
      assert.equal(receipt.status, 'expired', 'the proof paid once, through the other receive');
    });

    it('refuses a proof for more than was paid, for another wallet, or for a wallet not the caller’s', async () => {
      const paid = await paidShop(0.02);
      const tooMuch = await receiveLocally(paid.paymentProof, { expectedAmount: 0.021 });
      assert.equal(tooMuch.statusCode, 422);
      assert.equal(tooMuch.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
      assert.deepEqual(tooMuch.json().error.details, { paymentProof: 'amount_too_low' });

      const otherWallet = newEvmLocalWallet();
      assert.equal((await watchAddress(f.gw, shop.key, otherWallet)).statusCode, 200);
      const elsewhere = await receiveLocally(paid.paymentProof, { walletAddress: otherWallet.address });
      assert.equal(elsewhere.statusCode, 422);
      assert.equal(elsewhere.json().error.code, 'INVALID_PAYMENT_PROOF');
      assert.deepEqual(elsewhere.json().error.details, { paymentProof: 'recipient_mismatch' });

      const notMine = await f.post(buyer.key, '/transaction/receive', {
        walletAddress: shopWallet.address,
        paymentProof: paid.paymentProof,
        expectedAmount: 0.02,
      });
      assert.equal(notMine.statusCode, 403);
      assert.equal(notMine.json().error.code, 'FORBIDDEN');
      // None of these used the proof up.
      assert.equal((await receiveLocally(paid.paymentProof, { expectedAmount: 0.02 })).statusCode, 200);
    });
  });

  describe('POST /v1/payments/verify with EVM proofs (amounts in wei)', () => {
    let custodial: EvmParty;
    let paid: { paymentProof: string; signature: string };
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const verify = (body: Record<string, unknown>) =>
      f.post(seller.key, '/v1/payments/verify', {
        payment_proof: b64(paid.paymentProof),
        amount: 100_000_000_000_000_000,
        recipient: seller.wallet,
        ...body,
      });

    before(async () => {
      custodial = await f.party(ETH);
      const sent = await f.post(custodial.key, '/payment/send', {
        walletAddress: custodial.wallet,
        recipientAddress: seller.wallet,
        amount: 0.1,
      });
      assert.equal(sent.statusCode, 200, sent.body);
      paid = sent.json();
    });

    it('says verified with the transaction hash for at most the wei paid, as often as asked', async () => {
      for (const body of [{}, { amount: 1 }, { recipient: seller.wallet.toLowerCase() }]) {
        const res = await verify(body);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json(), {
          verified: true,
          transaction_id: paid.signature,
          network: NETWORK,
          asset: { symbol: 'ETH', address: null, decimals: 18 },
        });
      }
    });

    it('answers verified: false for one wei too many, another recipient, a tampered proof', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ amount: 100_000_000_000_000_100 }, 'amount_too_low'],
        [{ recipient: custodial.wallet }, 'recipient_mismatch'],
        [{ payment_proof: b64(lastCharacterChanged(paid.paymentProof)) }, 'bad_signature'],
      ];
      for (const [body, reason] of cases) {
        const res = await verify(body);
        assert.equal(res.statusCode, 200, JSON.stringify(body));
        assert.equal(res.json().verified, false, JSON.stringify(body));
        assert.equal(res.json().reason, reason, JSON.stringify(body));
      }
    });

    it('refuses an amount a JSON number cannot hold exactly instead of rounding it', async () => {
      const res = await f.gw.app.inject({
        method: 'POST',
        url: '/v1/payments/verify',
        headers: { authorization: `Bearer ${seller.key}`, 'content-type': 'application/json' },
        payload: `{"payment_proof":"${b64(paid.paymentProof)}","amount":100000000000000001,"recipient":"${seller.wallet}"}`,
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.ok(res.json().error.details.amount);
    });

    it('says already_used once the proof is redeemed', async () => {
      const redeemed = await f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: paid.paymentProof,
        expectedAmount: 0.1,
      });
      assert.equal(redeemed.statusCode, 200, redeemed.body);
      const res = await verify({});
      assert.equal(res.json().verified, false);
      assert.equal(res.json().reason, 'already_used');
    });
  });
});

/** A checksummed address with one letter in the other case: a typo its EIP-55 checksum catches. */
function caseOfOneLetterSwapped(address: string): string {
  const at = address.slice(2).search(/[a-fA-F]/) + 2;
  const letter = address.charAt(at);
  const swapped = letter === letter.toUpperCase() ? letter.toLowerCase() : letter.toUpperCase();
  return `${address.slice(0, at)}${swapped}${address.slice(at + 1)}`;
}
