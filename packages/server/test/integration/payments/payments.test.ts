import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SOLANA_RESERVED_ACCOUNTS } from '../../../src/chains/solana/reserved-accounts.ts';
import { lastCharacterChanged } from '../../support/last-character-changed.ts';
import {
  LAMPORTS,
  type Party,
  type PaymentFixture,
  startPaymentFixture,
} from '../../support/payment-fixture.ts';
import { assertTransferred } from '../../support/transfer-checks.ts';

const PAYMENT_ID = /^pay_[0-9A-HJKMNP-TV-Z]{26}$/;

describe('Lightning mode on Solana: send, receive, status, history', () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;

  before(async () => {
    f = await startPaymentFixture();
    buyer = await f.party(250);
    seller = await f.party();
  });
  after(() => f.close());

  const send = (payer: Party, body: Record<string, unknown>, headers?: Record<string, string>) =>
    f.post(payer.key, '/payment/send', { walletAddress: payer.wallet, ...body }, headers);

  it('runs the whole loop: the buyer pays, the seller verifies, both see it', async () => {
    const balanceBefore = await f.chain.adapter.getBalance(buyer.wallet);
    const sent = await send(buyer, {
      recipientAddress: seller.wallet,
      amount: 0.1,
      resource: 'https://api.example.com/premium/data',
      metadata: { description: 'one report', referenceId: 'order-42' },
    });
    assert.equal(sent.statusCode, 200, sent.body);
    const s = sent.json();
    assert.equal(s.success, true);
    assert.match(s.paymentId, PAYMENT_ID);
    assert.equal(s.amount, 0.1);
    assert.equal(s.recipient, seller.wallet);
    assert.equal(s.status, 'confirmed');
    assert.equal(typeof s.blockHeight, 'number');
    assert.ok(Math.abs(s.timestamp - Date.now()) < 60_000);
    assert.equal(s.estimatedConfirmation, '1-2 seconds');
    assert.match(s.paymentProof, /^0x[0-9a-f]+$/);
    assert.match(s.signature, /^[1-9A-HJ-NP-Za-km-z]{64,88}$/);

    const tx = await f.chain.adapter.getTransaction(s.signature);
    assert.ok(tx);
    await assertTransferred((address) => f.chain.adapter.getBalance(address), {
      payer: buyer.wallet,
      payerBefore: balanceBefore,
      recipient: seller.wallet,
      amount: LAMPORTS / 10n,
      fee: tx.fee,
      feeIs: 'the transaction fee',
    });
    assert.deepEqual(tx.memos, [s.paymentId], 'the memo carries the paymentId');

    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: s.paymentProof,
      expectedAmount: 0.1,
      resource: 'https://api.example.com/premium/data',
    });
    assert.equal(received.statusCode, 200, received.body);
    const r = received.json();
    assert.equal(r.success, true);
    assert.equal(r.verified, true);
    assert.match(r.paymentId, PAYMENT_ID);
    assert.notEqual(r.paymentId, s.paymentId, 'the seller gets a payment id of its own');
    assert.equal(r.signature, s.signature);
    assert.equal(r.amountReceived, 0.1);
    assert.equal(r.sender, buyer.wallet);
    assert.equal(r.status, 'confirmed');
    assert.equal(r.blockHeight, s.blockHeight);
    assert.match(r.verificationTime, /^\d+ms$/);

    const status = await f.get(buyer.key, `/payment/status/${s.paymentId}`);
    assert.equal(status.statusCode, 200);
    const p = status.json();
    assert.deepEqual(
      { ...p, confirmations: 0, timestamp: 0 },
      {
        paymentId: s.paymentId,
        type: 'sent',
        network: f.chain.localnet.network,
        signature: s.signature,
        status: 'confirmed',
        amount: 0.1,
        sender: buyer.wallet,
        recipient: seller.wallet,
        resource: 'https://api.example.com/premium/data',
        blockHeight: s.blockHeight,
        confirmations: 0,
        timestamp: 0,
        metadata: { description: 'one report', referenceId: 'order-42' },
        asset: { symbol: 'SOL', address: null, decimals: 9 },
      },
    );
    assert.ok(p.confirmations >= 1);
    assert.equal(p.timestamp, s.timestamp);

    const sellerStatus = await f.get(seller.key, `/payment/status/${r.paymentId}`);
    assert.equal(sellerStatus.json().type, 'received');
    assert.equal(sellerStatus.json().sender, buyer.wallet);

    const buyerHistory = (await f.get(buyer.key, `/payment/history/${buyer.wallet}`)).json();
    assert.equal(buyerHistory.walletAddress, buyer.wallet);
    assert.equal(buyerHistory.limit, 50);
    assert.equal(buyerHistory.offset, 0);
    const entry = buyerHistory.payments.find((e: { paymentId: string }) => e.paymentId === s.paymentId);
    assert.deepEqual(entry, {
      paymentId: s.paymentId,
      type: 'sent',
      amount: 0.1,
      recipient: seller.wallet,
      resource: 'https://api.example.com/premium/data',
      status: 'confirmed',
      timestamp: s.timestamp,
      signature: s.signature,
      network: f.chain.localnet.network,
      asset: { symbol: 'SOL', address: null, decimals: 9 },
    });
    const sellerHistory = (await f.get(seller.key, `/payment/history/${seller.wallet}?type=received`)).json();
    assert.equal(sellerHistory.total, 1);
    assert.equal(sellerHistory.payments[0].sender, buyer.wallet);
    assert.equal(sellerHistory.payments[0].recipient, undefined);
  });

  it('accepts a proof once: of 20 simultaneous receives exactly one succeeds', async () => {
    const sent = (await send(buyer, { recipientAddress: seller.wallet, amount: 0.002 })).json();
    const attempts = await Promise.all(
      Array.from({ length: 20 }, () =>
        f.post(seller.key, '/payment/receive', {
          walletAddress: seller.wallet,
          paymentProof: sent.paymentProof,
          expectedAmount: 0.002,
        }),
      ),
    );
    const ok = attempts.filter((a) => a.statusCode === 200);
    assert.equal(ok.length, 1);
    for (const refused of attempts.filter((a) => a.statusCode !== 200)) {
      assert.equal(refused.statusCode, 422);
      assert.equal(refused.json().error.code, 'INVALID_PAYMENT_PROOF');
      assert.deepEqual(refused.json().error.details, { paymentProof: 'already_used' });
    }
  });

  it('moves amounts exactly to the lamport', async () => {
    for (const [amount, lamports] of [
      [0.001, 1_000_000n],
      [0.1, 100_000_000n],
      [0.3, 300_000_000n],
      [100, 100_000_000_000n],
    ] as const) {
      const recipient = await f.party();
      const res = await send(buyer, { recipientAddress: recipient.wallet, amount });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().amount, amount);
      assert.equal(await f.chain.adapter.getBalance(recipient.wallet), lamports, `amount ${amount}`);
    }
  });

  it('refuses bad requests with the spec’s error body and the field', async () => {
    const cases: [Record<string, unknown>, number, string, Record<string, string>?][] = [
      [
        { recipientAddress: seller.wallet, amount: 0.0009 },
        400,
        'INVALID_PARAMETERS',
        { amount: 'must be between 0.001 and 100' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 100.000000001 },
        400,
        'INVALID_PARAMETERS',
        { amount: 'must be between 0.001 and 100' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1.0000000001 },
        400,
        'INVALID_PARAMETERS',
        { amount: 'has more than 9 decimal places (SOL has 9 decimals)' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, priorityFee: 0.02 },
        400,
        'INVALID_PARAMETERS',
        { priorityFee: 'must be between 0.00001 and 0.01' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, resource: 'not a url' },
        400,
        'INVALID_PARAMETERS',
        { resource: 'must be a valid uri' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, metadata: { blob: 'x'.repeat(5000) } },
        400,
        'INVALID_PARAMETERS',
        { metadata: 'must be at most 4096 bytes as JSON' },
      ],
      [
        { recipientAddress: seller.wallet, amount: '1' },
        400,
        'INVALID_PARAMETERS',
        { amount: 'must be a number' },
      ],
      [{ amount: 1 }, 400, 'INVALID_PARAMETERS', { recipientAddress: 'is required' }],
      [
        { recipientAddress: 'nope', amount: 1 },
        400,
        'INVALID_RECIPIENT',
        { recipientAddress: 'must be a solana address' },
      ],
      [
        { recipientAddress: `0x${'1'.repeat(40)}`, amount: 1 },
        400,
        'INVALID_RECIPIENT',
        { recipientAddress: 'must be a solana address' },
      ],
      [
        { recipientAddress: buyer.wallet, amount: 1 },
        400,
        'INVALID_RECIPIENT',
        { recipientAddress: 'must differ from walletAddress' },
      ],
      [
        { recipientAddress: '11111111111111111111111111111111', amount: 1 },
        400,
        'INVALID_RECIPIENT',
        { recipientAddress: 'is the System Program' },
      ],
      // The other programs the transfer invokes: it could not be built (it failed with 500).
      [
        { recipientAddress: 'ComputeBudget111111111111111111111111111111', amount: 1 },
        400,
        'INVALID_RECIPIENT',
        { recipientAddress: 'is the Compute Budget Program' },
      ],
      [
        { recipientAddress: 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr', amount: 1 },
        400,
        'INVALID_RECIPIENT',
        { recipientAddress: 'is the Memo Program' },
      ],
    ];
    for (const [body, status, code, details] of cases) {
      const res = await send(buyer, body);
      assert.equal(res.statusCode, status, JSON.stringify(body));
      assert.equal(res.json().success, false);
      assert.equal(res.json().error.code, code, JSON.stringify(body));
      if (details !== undefined) assert.deepEqual(res.json().error.details, details, JSON.stringify(body));
    }
  });

  it('refuses a Solana sysvar or program as recipient with 400 INVALID_RECIPIENT, before signing or storing', async () => {
    const payer = await f.party(1);
    const before = await f.chain.adapter.getBalance(payer.wallet);
    // Each failed on chain after its fee was paid (422 PAYMENT_FAILED, a failed payment recorded), or,
    // for the SPL programs, was paid and lost.
    const named: [string, string][] = [
      ['SysvarC1ock11111111111111111111111111111111', 'Clock Sysvar'],
      ['SysvarRent111111111111111111111111111111111', 'Rent Sysvar'],
      ['Vote111111111111111111111111111111111111111', 'Vote Program'],
      ['Stake11111111111111111111111111111111111111', 'Stake Program'],
      ['BPFLoaderUpgradeab1e11111111111111111111111', 'Upgradeable BPF Loader'],
      ['AddressLookupTab1e1111111111111111111111111', 'Address Lookup Table Program'],
      ['Config1111111111111111111111111111111111111', 'Config Program'],
      ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'Token Program'],
      ['TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb', 'Token-2022 Program'],
      ['ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL', 'Associated Token Account Program'],
    ];
    for (const [recipientAddress, name] of [...named, ...Object.entries(SOLANA_RESERVED_ACCOUNTS)]) {
      const res = await send(payer, { recipientAddress, amount: 0.01 });
      assert.equal(res.statusCode, 400, `${recipientAddress}: ${res.body}`);
      assert.equal(res.json().error.code, 'INVALID_RECIPIENT', recipientAddress);
      assert.deepEqual(res.json().error.details, { recipientAddress: `is the ${name}` });
    }
    const history = await f.get(payer.key, `/payment/history/${payer.wallet}`);
    assert.equal(history.json().total, 0, `nothing stored: ${history.body}`);
    assert.equal(await f.chain.adapter.getBalance(payer.wallet), before, 'no fee paid');
  });

  it('refuses to spend what the wallet does not hold, before signing', async () => {
    const poor = await f.party(0.5);
    const res = await send(poor, { recipientAddress: seller.wallet, amount: 0.5 });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
    assert.match(res.json().error.message, /need 0\.500005 SOL; the wallet holds 0\.5 SOL/);
    assert.equal(await f.chain.adapter.getBalance(poor.wallet), 500_000_000n, 'nothing moved');
  });

  it('answers concurrent sends beyond the balance 422, naming each failed payment it recorded, and pays no fee for them', async () => {
    const poor = await f.party(0.05);
    const sends = await Promise.all(
      Array.from({ length: 10 }, () => send(poor, { recipientAddress: seller.wallet, amount: 0.01 })),
    );
    // 0.05 SOL pays four sends of 0.01 and their fees, not a fifth.
    const paid = sends.filter((res) => res.statusCode === 200);
    const refused = sends.filter((res) => res.statusCode === 422);
    assert.deepEqual([paid.length, refused.length], [4, 6]);
    assert.ok(refused.every((res) => res.json().error.code === 'INSUFFICIENT_BALANCE'));
    // Each send refused after it was stored is in the history as failed, and its answer names it.
    const named = refused.map((res) => res.json().error.details.paymentId).filter((id) => id !== undefined);
    const history = (await f.get(poor.key, `/payment/history/${poor.wallet}`)).json();
    const failed = history.payments.filter((p: { status: string }) => p.status === 'failed');
    assert.deepEqual(failed.map((p: { paymentId: string }) => p.paymentId).sort(), named.sort());
    assert.equal(history.total, 4 + failed.length);
    let fees = 0n;
    for (const res of paid) fees += (await f.chain.adapter.getTransaction(res.json().signature))?.fee ?? 0n;
    assert.equal(await f.chain.adapter.getBalance(poor.wallet), 10_000_000n - fees, 'only the four paid');
  });

  it('keeps accounts apart on every route', async () => {
    const sent = (await send(buyer, { recipientAddress: seller.wallet, amount: 0.001 })).json();
    const other = await f.party();
    const status = await f.get(other.key, `/payment/status/${sent.paymentId}`);
    assert.equal(status.statusCode, 404);
    assert.equal(status.json().error.code, 'PAYMENT_NOT_FOUND');
    const missing = await f.get(other.key, '/payment/status/pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB');
    assert.deepEqual(missing.json().error.code, 'PAYMENT_NOT_FOUND');
    assert.equal(
      missing.json().error.message.replace(/pay_\w+/, ''),
      status.json().error.message.replace(/pay_\w+/, ''),
    );
    const history = await f.get(other.key, `/payment/history/${buyer.wallet}`);
    assert.equal(history.statusCode, 403);
    const spend = await f.post(other.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: other.wallet,
      amount: 1,
    });
    assert.equal(spend.statusCode, 403);
    assert.equal(spend.json().error.code, 'FORBIDDEN');
    const claim = await f.post(other.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: sent.paymentProof,
      expectedAmount: 0.001,
    });
    assert.equal(claim.statusCode, 403, 'cannot receive into another account’s wallet');
    const watch = await f.post(other.key, '/wallets/challenge', {
      chain: 'solana',
      address: seller.wallet,
    });
    assert.equal(watch.statusCode, 409, 'cannot register another account’s wallet as watch-only');
    assert.equal(watch.json().error.code, 'WALLET_ALREADY_REGISTERED');
  });

  it('refuses proofs that are malformed, forged, for someone else, too small or for another resource', async () => {
    const third = await f.party();
    const sent = (
      await send(buyer, {
        recipientAddress: seller.wallet,
        amount: 0.01,
        resource: 'https://api.example.com/a',
      })
    ).json();
    const receive = (party: Party, body: Record<string, unknown>) =>
      f.post(party.key, '/payment/receive', {
        walletAddress: party.wallet,
        paymentProof: sent.paymentProof,
        expectedAmount: 0.01,
        ...body,
      });
    const tampered = lastCharacterChanged(sent.paymentProof);
    const cases: [Party, Record<string, unknown>, string, string][] = [
      [seller, { paymentProof: '0x1234' }, 'INVALID_PAYMENT_PROOF', 'malformed'],
      [seller, { paymentProof: 'not hex at all' }, 'INVALID_PAYMENT_PROOF', 'malformed'],
      [seller, { paymentProof: tampered }, 'INVALID_PAYMENT_PROOF', 'bad_signature'],
      [third, {}, 'INVALID_PAYMENT_PROOF', 'recipient_mismatch'],
      [seller, { resource: 'https://api.example.com/b' }, 'INVALID_PAYMENT_PROOF', 'resource_mismatch'],
      [seller, { expectedAmount: 0.010000001 }, 'PAYMENT_VERIFICATION_FAILED', 'amount_too_low'],
    ];
    for (const [party, body, code, reason] of cases) {
      const res = await receive(party, body);
      assert.equal(res.statusCode, 422, JSON.stringify(body));
      assert.equal(res.json().error.code, code, JSON.stringify(body));
      assert.deepEqual(res.json().error.details, { paymentProof: reason }, JSON.stringify(body));
    }
    const ok = await receive(seller, {});
    assert.equal(ok.statusCode, 200, 'the refusals did not use the proof up');
  });

  it('refuses a proof that names no resource when the receive names one, and accepts it without', async () => {
    const sent = (await send(buyer, { recipientAddress: seller.wallet, amount: 0.01 })).json();
    const receive = (body: Record<string, unknown>) =>
      f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: sent.paymentProof,
        expectedAmount: 0.01,
        ...body,
      });
    const named = await receive({ resource: 'https://api.example.com/premium/data' });
    assert.equal(named.statusCode, 422, named.body);
    assert.equal(named.json().error.code, 'INVALID_PAYMENT_PROOF');
    assert.deepEqual(named.json().error.details, { paymentProof: 'resource_missing' });
    const unnamed = await receive({});
    assert.equal(unnamed.statusCode, 200, 'the refusal did not use the proof up');
    assert.equal(unnamed.json().signature, sent.signature);
  });

  it('pages history newest first with a total, and refuses bad parameters', async () => {
    const payer = await f.party(5);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await send(payer, { recipientAddress: seller.wallet, amount: 0.001 })).json().paymentId);
    const page = (await f.get(payer.key, `/payment/history/${payer.wallet}?limit=2&offset=1`)).json();
    assert.equal(page.total, 3);
    assert.deepEqual(
      page.payments.map((p: { paymentId: string }) => p.paymentId),
      [ids[1], ids[0]],
    );
    for (const [query, details] of [
      ['limit=501', { limit: 'must be between 1 and 500' }],
      ['limit=0', { limit: 'must be between 1 and 500' }],
      ['offset=-1', { offset: 'must be between 0 and 1000000' }],
      ['type=both', { type: 'must be one of sent, received, all' }],
    ] as const) {
      const res = await f.get(payer.key, `/payment/history/${payer.wallet}?${query}`);
      assert.equal(res.statusCode, 400, query);
      assert.deepEqual(res.json().error.details, details, query);
    }
  });

  it('refuses metadata nested thousands of levels deep as too large, with an Idempotency-Key too, not 500', async () => {
    const depth = 10_000;
    const post = (url: string, headers: Record<string, string> = {}) =>
      f.gw.app.inject({
        method: 'POST',
        url,
        headers: { authorization: `Bearer ${buyer.key}`, 'content-type': 'application/json', ...headers },
        // Written by hand: JSON.stringify itself gives up on such nesting.
        payload: `{"walletAddress":"${buyer.wallet}","recipientAddress":"${seller.wallet}","amount":0.005,"metadata":{"deep":${'['.repeat(depth)}${']'.repeat(depth)}}}`,
      });
    for (const url of ['/payment/send', '/transaction/send']) {
      const plain = await post(url);
      assert.equal(plain.statusCode, 400, plain.body);
      assert.deepEqual(plain.json().error.details, { metadata: 'must be at most 4096 bytes as JSON' });
      const keyed = await post(url, { 'idempotency-key': `deep-${url}` });
      assert.equal(keyed.statusCode, 400, keyed.body);
      assert.deepEqual(keyed.json().error.details, { body: 'must not nest thousands of levels deep' });
    }
  });

  it('answers a receive retried with its Idempotency-Key after the first answer was lost with the payment it recorded, not "already used"', {
    timeout: 60_000,
  }, async () => {
    const sent = await send(buyer, { recipientAddress: seller.wallet, amount: 0.002 });
    assert.equal(sent.statusCode, 200, sent.body);
    const body = {
      walletAddress: seller.wallet,
      paymentProof: sent.json().paymentProof,
      expectedAmount: 0.002,
    };
    const receive = () => f.post(seller.key, '/payment/receive', body, { 'idempotency-key': 'receipt-9' });
    // The first answer is never stored, as when the instance is SIGKILLed between recording the payment
    // and writing the answer: the key keeps a claim with no answer, which lapses.
    const { idempotency } = f.gw.store;
    const complete = idempotency.complete;
    idempotency.complete = async () => {
      idempotency.complete = complete;
    };
    assert.equal((await receive()).statusCode, 200);
    const recorded = (await f.get(seller.key, `/payment/history/${seller.wallet}?limit=100`))
      .json()
      .payments.filter((p: { signature: string }) => p.signature === sent.json().signature);
    assert.equal(recorded.length, 1, 'the first receive recorded the payment');

    // The client retries with its key until the claim of the lost request lapses (about 10 s).
    let retry = await receive();
    for (let tries = 0; retry.statusCode === 409 && tries < 60; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      retry = await receive();
    }
    assert.equal(retry.statusCode, 200, retry.body);
    assert.equal(retry.json().paymentId, recorded[0].paymentId);
    assert.equal(retry.json().amountReceived, 0.002);
    assert.equal(retry.json().sender, buyer.wallet);
    assert.equal(retry.json().signature, sent.json().signature);
    // And that answer is the key's from now on; the proof stays used for any other request.
    const again = await receive();
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.json().paymentId, recorded[0].paymentId);
    const other = await f.post(seller.key, '/payment/receive', body, { 'idempotency-key': 'receipt-10' });
    assert.equal(other.statusCode, 422, other.body);
    assert.equal(other.json().error.details.paymentProof, 'already_used');
  });

  it('answers a send whose answer storage fails to keep under its Idempotency-Key with the payment, not 500, and a retry with it again', {
    timeout: 60_000,
  }, async () => {
    const recipient = await f.party();
    const body = { recipientAddress: recipient.wallet, amount: 0.003 };
    const { idempotency } = f.gw.store;
    const complete = idempotency.complete;
    idempotency.complete = async () => {
      idempotency.complete = complete;
      throw new Error('storage went away');
    };
    const first = await send(buyer, body, { 'idempotency-key': 'order-blip' });
    assert.equal(first.statusCode, 200, first.body);
    const { paymentId } = first.json();
    // The key's claim lapses (about 10 s); the retry finds the payment by its key.
    let retry = await send(buyer, body, { 'idempotency-key': 'order-blip' });
    for (let tries = 0; retry.statusCode === 409 && tries < 60; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      retry = await send(buyer, body, { 'idempotency-key': 'order-blip' });
    }
    assert.equal(retry.statusCode, 200, retry.body);
    assert.equal(retry.json().paymentId, paymentId);
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 3_000_000n, 'paid once');
  });

  it('answers a retry with the same Idempotency-Key without paying twice', async () => {
    const recipient = await f.party();
    const body = { recipientAddress: recipient.wallet, amount: 0.005 };
    const first = await send(buyer, body, { 'idempotency-key': 'order-7' });
    const again = await send(buyer, body, { 'idempotency-key': 'order-7' });
    assert.equal(first.statusCode, 200);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().paymentId, first.json().paymentId);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 5_000_000n, 'paid once');
    const other = await send(buyer, { ...body, amount: 0.006 }, { 'idempotency-key': 'order-7' });
    assert.equal(other.statusCode, 422);
    assert.equal(other.json().error.code, 'IDEMPOTENCY_KEY_REUSED');
    // A key names one request of the account, whichever route: the same body built in local mode is another.
    const local = await f.post(
      buyer.key,
      '/transaction/send',
      { walletAddress: buyer.wallet, ...body },
      { 'idempotency-key': 'order-7' },
    );
    assert.equal(local.statusCode, 422, local.body);
    assert.equal(local.json().error.code, 'IDEMPOTENCY_KEY_REUSED');
  });
});
