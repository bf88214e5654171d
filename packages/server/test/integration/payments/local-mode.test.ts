import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getCompiledTransactionMessageDecoder, getTransactionDecoder } from '@solana/kit';
import { SOLANA_RESERVED_ACCOUNTS } from '../../../src/chains/solana/reserved-accounts.ts';
import { toChainError } from '../../../src/chains/solana/solana-errors.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import {
  LAMPORTS,
  type Party,
  type PaymentFixture,
  startPaymentFixture,
} from '../../support/payment-fixture.ts';
import { watchAddress } from '../../support/proof-of-control.ts';

const PAYMENT_ID = /^pay_[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * Local transaction mode on a localnet whose slots advance only when the test says so: the caller
 * signs with its own key and broadcasts through the chain's RPC; the reconciler watches.
 */
describe('local transaction mode: /transaction/send, watching, local-mode proofs, /transaction/receive', () => {
  let f: PaymentFixture;
  let buyer: { accountId: string; key: string };
  let payer: { address: string; secretKey: Uint8Array };
  let seller: Party;
  let reconciler: PaymentReconciler;

  before(async () => {
    f = await startPaymentFixture({ chain: { slotMs: 0, finalizedDepth: 2 } });
    buyer = await f.gw.newCaller();
    payer = generateSolanaKeypair();
    f.chain.localnet.airdrop(payer.address, 20n * LAMPORTS);
    f.chain.localnet.advanceSlots(1);
    seller = await f.party();
    reconciler = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      instanceId: 'local-worker',
      recheckMs: 0,
    });
  });
  after(() => f.close());

  const build = (body: Record<string, unknown>, headers?: Record<string, string>) =>
    f.post(buyer.key, '/transaction/send', { walletAddress: payer.address, ...body }, headers);
  const status = async (key: string, paymentId: string) =>
    (await f.get(key, `/payment/status/${paymentId}`)).json();
  const broadcast = (tx: string, secretKey = payer.secretKey) =>
    signAndBroadcast(f.chain.localnet.rpcUrl, tx, secretKey);

  it('builds an unsigned transaction; once signed and broadcast by the caller it confirms, then finalizes', async () => {
    const before = Date.now();
    const height = await f.chain.adapter.getBlockHeight();
    const res = await build({
      recipientAddress: seller.wallet,
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
    assert.equal(b.estimatedConfirmation, '1-2 seconds');
    assert.equal(b.lastValidBlockHeight, Number(height) + 150);
    // Manual slots: the blockhash never expires by time, so the 60 s bound applies.
    assert.ok(b.expiresAt >= before + 60_000 && b.expiresAt <= Date.now() + 60_000, String(b.expiresAt));

    const tx = getTransactionDecoder().decode(Buffer.from(b.transaction, 'base64'));
    assert.deepEqual(Object.entries(tx.signatures), [[payer.address, null]], 'one empty slot: the payer');
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    assert.equal(message.version, 0);
    assert.equal(message.staticAccounts[0], payer.address, 'fee payer');
    const refIndex = message.staticAccounts.indexOf(b.reference);
    assert.ok(
      refIndex >= message.staticAccounts.length - message.header.numReadonlyNonSignerAccounts,
      'reference is read-only',
    );
    assert.equal(
      message.instructions.length,
      3,
      'compute-unit limit, transfer, memo (no price: no recent fees)',
    );

    const check = await f.gw.services.proofs.check(b.paymentProof);
    assert.ok(check.valid);
    const { kid: _kid, iat, ...claims } = check.claims;
    assert.deepEqual(claims, {
      v: 1,
      pid: b.paymentId,
      net: f.chain.localnet.network,
      ref: b.reference,
      from: payer.address,
      to: seller.wallet,
      amt: '250000000',
      res: 'https://api.example.com/report',
    });
    assert.ok(iat >= before);

    await reconciler.runOnce();
    const pending = await status(buyer.key, b.paymentId);
    assert.equal(pending.status, 'pending');
    assert.equal(pending.signature, null);

    const signature = await broadcast(b.transaction);
    f.chain.localnet.advanceSlots(1);
    await reconciler.runOnce();
    const confirmed = await status(buyer.key, b.paymentId);
    assert.equal(confirmed.status, 'confirmed');
    assert.equal(confirmed.signature, signature);
    assert.equal(confirmed.sender, payer.address);
    assert.equal(confirmed.type, 'sent');
    assert.equal(confirmed.blockHeight, Number(height) + 1);
    assert.deepEqual(confirmed.metadata, { referenceId: 'order-9' });
    assert.equal(await f.chain.adapter.getBalance(seller.wallet), 250_000_000n);
    const onChain = await f.chain.adapter.getTransaction(signature);
    assert.deepEqual(onChain?.memos, [b.paymentId]);

    const history = (await f.get(buyer.key, `/payment/history/${payer.address}`)).json();
    assert.equal(history.total, 1);
    assert.deepEqual(history.payments[0], {
      paymentId: b.paymentId,
      type: 'sent',
      amount: 0.25,
      recipient: seller.wallet,
      resource: 'https://api.example.com/report',
      status: 'confirmed',
      timestamp: history.payments[0].timestamp,
      signature,
      network: f.chain.localnet.network,
      asset: { symbol: 'SOL', address: null, decimals: 9 },
    });

    f.chain.localnet.advanceSlots(3);
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'finalized');
    const events = (await f.gw.store.events.listAfter(buyer.accountId, 0, 100))
      .filter((e) => e.paymentId === b.paymentId)
      .map((e) => e.type);
    assert.deepEqual(events, ['payment.confirmed', 'payment.finalized']);
  });

  it('expires a transaction never sent, and the chain refuses it when it is signed too late', async () => {
    const recipient = await f.party();
    const b = (await build({ recipientAddress: recipient.wallet, amount: 0.5 })).json();
    f.chain.localnet.advanceSlots(151);
    await reconciler.runOnce();
    const expired = await status(buyer.key, b.paymentId);
    assert.equal(expired.status, 'expired');
    await assert.rejects(
      broadcast(b.transaction),
      (error: unknown) => toChainError(error).kind === 'blockhash_expired',
      'the blockhash is gone: the chain refuses it',
    );
    f.chain.localnet.advanceSlots(1);
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'expired');
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 0n);
  });

  it('keeps a transaction pending past expiresAt while its blockhash is valid, and confirms it when it lands', async () => {
    const recipient = await f.party();
    const b = (await build({ recipientAddress: recipient.wallet, amount: 0.3 })).json();
    // A worker whose clock is past expiresAt; manual slots keep the blockhash valid.
    const late = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      instanceId: 'local-late',
      recheckMs: 0,
      now: () => Date.now() + 61_000,
    });
    await late.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'pending', 'the chain still takes it');
    const signature = await broadcast(b.transaction);
    f.chain.localnet.advanceSlots(1);
    await late.runOnce();
    const confirmed = await status(buyer.key, b.paymentId);
    assert.equal(confirmed.status, 'confirmed');
    assert.equal(confirmed.signature, signature);
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 300_000_000n);
    const events = (await f.gw.store.events.listAfter(buyer.accountId, 0, 1000))
      .filter((e) => e.paymentId === b.paymentId)
      .map((e) => e.type);
    assert.deepEqual(events, ['payment.confirmed'], 'never called expired');
  });

  it('never confirms a tampered transaction that reuses the reference with another amount or recipient', async () => {
    const thief = generateSolanaKeypair().address;
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.01 })).json();
    for (const [to, amount] of [
      [thief, 10_000_000n],
      [seller.wallet, 1_000_000n],
    ] as const) {
      const forged = await f.chain.adapter.prepareTransfer({
        from: payer.address,
        to,
        amount,
        memo: b.paymentId,
        reference: b.reference,
      });
      await broadcast(Buffer.from(forged.unsigned).toString('base64'));
    }
    f.chain.localnet.advanceSlots(1);
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
    f.chain.localnet.advanceSlots(151);
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'expired');
  });

  it('accepts a local-mode proof once its transaction lands, by either kind of proof only once', async () => {
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.02 })).json();
    const receive = (proof: string, timeout = 1) =>
      f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: proof,
        expectedAmount: 0.02,
        timeout,
      });
    const early = await receive(b.paymentProof);
    assert.equal(early.statusCode, 422);
    assert.equal(early.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
    assert.deepEqual(early.json().error.details, { paymentProof: 'not_found' });

    // A receive that is already waiting when the transaction lands succeeds.
    const waiting = receive(b.paymentProof, 10);
    const signature = await broadcast(b.transaction);
    f.chain.localnet.advanceSlots(1);
    const ok = await waiting;
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().signature, signature);
    assert.equal(ok.json().amountReceived, 0.02);
    assert.equal(ok.json().sender, payer.address);
    assert.equal(ok.json().status, 'confirmed');

    const again = await receive(b.paymentProof);
    assert.equal(again.statusCode, 422);
    assert.deepEqual(again.json().error.details, { paymentProof: 'already_used' });
    // The same transaction named by signature (a Lightning-style proof) is the same payment.
    const bySignature = f.gw.services.proofs.issue({
      pid: b.paymentId,
      net: f.chain.localnet.network,
      sig: signature,
      from: payer.address,
      to: seller.wallet,
      amt: '20000000',
      iat: Date.now(),
    });
    const replay = await receive(bySignature);
    assert.equal(replay.statusCode, 422);
    assert.deepEqual(replay.json().error.details, { paymentProof: 'already_used' });
  });

  it('answers a retried build with the same Idempotency-Key with the same transaction', async () => {
    const body = { recipientAddress: seller.wallet, amount: 0.003 };
    const first = await build(body, { 'idempotency-key': 'local-1' });
    const again = await build(body, { 'idempotency-key': 'local-1' });
    assert.equal(first.statusCode, 200);
    assert.deepEqual(again.json(), first.json());
    assert.equal(again.headers['idempotent-replayed'], 'true');
  });

  it('refuses bad requests like /payment/send does', async () => {
    const cases: [Record<string, unknown>, string, Record<string, string>][] = [
      [
        { recipientAddress: seller.wallet, amount: 0.0009 },
        'INVALID_PARAMETERS',
        { amount: 'must be between 0.001 and 100' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 101 },
        'INVALID_PARAMETERS',
        { amount: 'must be between 0.001 and 100' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, priorityFee: 0.000001 },
        'INVALID_PARAMETERS',
        { priorityFee: 'must be between 0.00001 and 0.01' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, resource: 'nope' },
        'INVALID_PARAMETERS',
        { resource: 'must be a valid uri' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, metadata: { blob: 'x'.repeat(5000) } },
        'INVALID_PARAMETERS',
        { metadata: 'must be at most 4096 bytes as JSON' },
      ],
      [
        { recipientAddress: 'nope', amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'must be a solana address' },
      ],
      [
        { recipientAddress: payer.address, amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'must differ from walletAddress' },
      ],
      [
        { recipientAddress: '11111111111111111111111111111111', amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'is the System Program' },
      ],
      [
        { walletAddress: '11111111111111111111111111111111', recipientAddress: seller.wallet, amount: 1 },
        'INVALID_PARAMETERS',
        { walletAddress: 'is the System Program, which cannot sign a transfer' },
      ],
      // The other programs the transfer invokes: it could not be built (it failed with 500).
      [
        { recipientAddress: 'ComputeBudget111111111111111111111111111111', amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'is the Compute Budget Program' },
      ],
      [
        { recipientAddress: 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr', amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'is the Memo Program' },
      ],
      [
        {
          walletAddress: 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
          recipientAddress: seller.wallet,
          amount: 1,
        },
        'INVALID_PARAMETERS',
        { walletAddress: 'is the Memo Program, which cannot sign a transfer' },
      ],
      [
        { walletAddress: 'xyz', recipientAddress: seller.wallet, amount: 1 },
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
    const poor = generateSolanaKeypair().address;
    const res = await f.post(buyer.key, '/transaction/send', {
      walletAddress: poor,
      recipientAddress: seller.wallet,
      amount: 1,
    });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
  });

  it('refuses a Solana sysvar or program as recipient or payer with 400, before building or storing anything', async () => {
    // A caller of its own, whose limit these requests fit; the history is the buyer's, who built with this payer.
    const caller = await f.gw.newCaller('enterprise', 1000);
    const historyTotal = async () =>
      (await f.get(buyer.key, `/payment/history/${payer.address}`)).json().total as number;
    const stored = await historyTotal();
    const named: [string, string][] = [
      ['SysvarC1ock11111111111111111111111111111111', 'Clock Sysvar'],
      ['SysvarRent111111111111111111111111111111111', 'Rent Sysvar'],
      ['Vote111111111111111111111111111111111111111', 'Vote Program'],
      ['Stake11111111111111111111111111111111111111', 'Stake Program'],
      ['BPFLoaderUpgradeab1e11111111111111111111111', 'Upgradeable BPF Loader'],
      ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'Token Program'],
    ];
    for (const [address, name] of [...named, ...Object.entries(SOLANA_RESERVED_ACCOUNTS)]) {
      // The transaction it built failed simulation once signed (or, for the SPL programs, paid and lost).
      const res = await f.post(caller.key, '/transaction/send', {
        walletAddress: payer.address,
        recipientAddress: address,
        amount: 0.01,
      });
      assert.equal(res.statusCode, 400, `${address}: ${res.body}`);
      assert.equal(res.json().error.code, 'INVALID_RECIPIENT', address);
      assert.deepEqual(res.json().error.details, { recipientAddress: `is the ${name}` });
      const asPayer = await f.post(caller.key, '/transaction/send', {
        walletAddress: address,
        recipientAddress: seller.wallet,
        amount: 0.01,
      });
      assert.equal(asPayer.statusCode, 400, `${address}: ${asPayer.body}`);
      assert.equal(asPayer.json().error.code, 'INVALID_PARAMETERS', address);
      assert.deepEqual(asPayer.json().error.details, {
        walletAddress: `is the ${name}, which cannot sign a transfer`,
      });
    }
    assert.equal(await historyTotal(), stored, 'nothing stored');
  });

  describe('/transaction/receive: the seller signs a receipt', () => {
    let shop: { accountId: string; key: string };
    let shopWallet: { address: string; secretKey: Uint8Array };

    before(async () => {
      shop = await f.gw.newCaller();
      shopWallet = generateSolanaKeypair();
      const watched = await watchAddress(f.gw, shop.key, shopWallet);
      assert.equal(watched.statusCode, 200, watched.body);
      f.chain.localnet.airdrop(shopWallet.address, LAMPORTS);
      f.chain.localnet.advanceSlots(1);
    });

    /** A local-mode payment to the shop, signed and landed. */
    async function paidShop(amount: number) {
      const b = (await build({ recipientAddress: shopWallet.address, amount })).json();
      const signature = await broadcast(b.transaction);
      f.chain.localnet.advanceSlots(1);
      return { ...b, signature };
    }
    const receiveLocally = (proof: string) =>
      f.post(shop.key, '/transaction/receive', {
        walletAddress: shopWallet.address,
        paymentProof: proof,
        expectedAmount: 0.05,
        timeout: 1,
      });

    it('consumes the proof when the receipt lands, not before; a second attempt is refused', async () => {
      const paid = await paidShop(0.05);
      const res = await receiveLocally(paid.paymentProof);
      assert.equal(res.statusCode, 200, res.body);
      const r = res.json();
      assert.equal(r.verified, true);
      assert.match(r.paymentId, PAYMENT_ID);
      assert.equal(r.status, 'pending');
      assert.equal(r.signature, paid.signature);
      assert.equal(r.amountReceived, 0.05);
      assert.equal(r.sender, payer.address);
      const message = getCompiledTransactionMessageDecoder().decode(
        getTransactionDecoder().decode(Buffer.from(r.transaction, 'base64')).messageBytes,
      );
      assert.equal(message.staticAccounts[0], shopWallet.address, 'the seller pays for its receipt');

      // Not consumed yet: verification still says yes.
      const verify = await f.post(shop.key, '/v1/payments/verify', {
        payment_proof: Buffer.from(paid.paymentProof).toString('base64'),
        amount: 50_000_000,
        recipient: shopWallet.address,
      });
      assert.deepEqual(verify.json(), {
        verified: true,
        transaction_id: paid.signature,
        network: f.chain.localnet.network,
        asset: { symbol: 'SOL', address: null, decimals: 9 },
      });

      const receiptSignature = await broadcast(r.transaction, shopWallet.secretKey);
      f.chain.localnet.advanceSlots(1);
      await reconciler.runOnce();
      const seen = await status(shop.key, r.paymentId);
      assert.equal(seen.status, 'confirmed');
      assert.equal(seen.type, 'received');
      assert.equal(seen.signature, paid.signature);
      const receipt = await f.chain.adapter.getTransaction(receiptSignature);
      assert.equal(receipt?.feePayer, shopWallet.address);
      assert.deepEqual(receipt?.memos, [`gate402 receipt ${r.paymentId} accepts ${paid.paymentId}`]);

      const second = await receiveLocally(paid.paymentProof);
      assert.equal(second.statusCode, 422);
      assert.deepEqual(second.json().error.details, { paymentProof: 'already_used' });
      const lightning = await f.post(shop.key, '/payment/receive', {
        walletAddress: shopWallet.address,
        paymentProof: paid.paymentProof,
        expectedAmount: 0.05,
      });
      assert.deepEqual(lightning.json().error.details, { paymentProof: 'already_used' });
    });

    it('leaves the proof redeemable when the receipt expires unsent', async () => {
      const paid = await paidShop(0.05);
      const r = (await receiveLocally(paid.paymentProof)).json();
      f.chain.localnet.advanceSlots(151);
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
  });
});
