import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex } from 'viem';
import { decodeTransferNote } from '../../../src/chains/evm/transfer-calldata.ts';
import { SOLANA_RESERVED_ACCOUNTS } from '../../../src/chains/solana/reserved-accounts.ts';
import { type EvmPaymentFixture, startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import { lastCharacterChanged } from '../../support/last-character-changed.ts';
import type { Party } from '../../support/party.ts';
import { type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { assertTransferred } from '../../support/transfer-checks.ts';

const PAYMENT_ID = /^pay_[0-9A-HJKMNP-TV-Z]{26}$/;

type Send = (
  payer: Party,
  body: Record<string, unknown>,
  headers?: Record<string, string>,
) => ReturnType<FamilyPaymentFixture['post']>;

/** What a family's own tests get: the fixture in its own terms (`raw`) and in the shared ones (`f`). */
interface Suite<F> {
  readonly raw: F;
  readonly f: FamilyPaymentFixture;
  readonly buyer: Party;
  readonly seller: Party;
  readonly send: Send;
}

/**
 * Custodial payments ("Lightning mode": the gateway holds the key and signs) on one chain family: what
 * differs between families is named here, the checks are the suite's.
 */
interface CustodialFamily<F> {
  readonly name: string;
  /** The native currency's symbol, for test names. */
  readonly symbol: string;
  start(): Promise<F & { close(): Promise<void> }>;
  shared(raw: F): FamilyPaymentFixture;
  /** The atomic unit's name, for test names: lamport, wei. */
  readonly atom: string;
  readonly signature: RegExp;
  readonly estimatedConfirmation: string;
  /** The chain's own checks of a landed send `s` (its memo carries the paymentId; its block). */
  checkLanded(raw: F, s: { signature: string; paymentId: string; blockHeight: number }): Promise<void>;
  readonly feeIs: string;
  /** Lets the chain move on past a landed send: the confirmations its status then shows, when exact. */
  deepen(raw: F): Promise<number | undefined>;
  /** Another way to write the same address that the API must take as that address. */
  otherSpelling(address: string): string;
  /** The INSUFFICIENT_BALANCE message for 0.5 sent from a wallet holding exactly 0.5. */
  readonly shortfall: RegExp;
  /** Send requests this family refuses with 400 for reasons of its own (its decimals, its address form). */
  familyBadRequests(s: {
    buyer: Party;
    seller: Party;
  }): [Record<string, unknown>, string, Record<string, string>][];
  /** Tests of what only this family has (Solana's programs and sysvars, EVM nonces and checksums). */
  familyTests(suite: () => Suite<F>): void;
}

function custodialPayments<F>(family: CustodialFamily<F>): void {
  describe(`custodial payments on ${family.name}: send, receive, status, history`, () => {
    let raw: F & { close(): Promise<void> };
    let f: FamilyPaymentFixture;
    let buyer: Party;
    let seller: Party;
    let unit: bigint;

    before(async () => {
      raw = await family.start();
      f = family.shared(raw);
      unit = f.family.unit;
      buyer = await f.party(250n * unit);
      seller = await f.party();
    });
    after(() => raw.close());

    const send: Send = (payer, body, headers) =>
      f.post(payer.key, '/payment/send', { walletAddress: payer.wallet, ...body }, headers);
    const { symbol } = family;

    it('runs the whole loop: the buyer pays, the seller verifies the proof on chain, both see it in status and history', async () => {
      const balanceBefore = await f.family.balance(buyer.wallet);
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
      assert.equal(s.network, f.network);
      assert.equal(s.status, 'confirmed');
      assert.equal(typeof s.blockHeight, 'number');
      assert.ok(Math.abs(s.timestamp - Date.now()) < 60_000);
      assert.equal(s.estimatedConfirmation, family.estimatedConfirmation);
      assert.match(s.paymentProof, /^0x[0-9a-f]+$/);
      assert.match(s.signature, family.signature);

      await family.checkLanded(raw, s);
      await assertTransferred((address) => f.family.balance(address), {
        payer: buyer.wallet,
        payerBefore: balanceBefore,
        recipient: seller.wallet,
        amount: unit / 10n,
        fee: await f.family.feeOf(s.signature),
        feeIs: family.feeIs,
      });

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

      const replay = await f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: s.paymentProof,
        expectedAmount: 0.1,
      });
      assert.equal(replay.statusCode, 422);
      assert.equal(replay.json().error.code, 'INVALID_PAYMENT_PROOF');
      assert.equal(replay.json().error.details.paymentProof, 'already_used');

      const confirmations = await family.deepen(raw);
      const checkConfirmations = (shown: number) =>
        confirmations === undefined ? assert.ok(shown >= 1, `${shown}`) : assert.equal(shown, confirmations);
      const status = await f.get(buyer.key, `/payment/status/${s.paymentId}`);
      assert.equal(status.statusCode, 200);
      const p = status.json();
      assert.deepEqual(
        { ...p, confirmations: 0, timestamp: 0 },
        {
          paymentId: s.paymentId,
          type: 'sent',
          network: f.network,
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
          asset: { ...f.native, address: null },
        },
      );
      checkConfirmations(p.confirmations);
      assert.equal(p.timestamp, s.timestamp);

      const sellerStatus = (await f.get(seller.key, `/payment/status/${r.paymentId}`)).json();
      assert.equal(sellerStatus.type, 'received');
      assert.equal(sellerStatus.sender, buyer.wallet);
      assert.equal(sellerStatus.amount, 0.1);
      checkConfirmations(sellerStatus.confirmations);

      const entry = {
        paymentId: s.paymentId,
        type: 'sent',
        amount: 0.1,
        recipient: seller.wallet,
        resource: 'https://api.example.com/premium/data',
        status: 'confirmed',
        timestamp: s.timestamp,
        signature: s.signature,
        network: f.network,
        asset: { ...f.native, address: null },
      };
      const buyerHistory = (await f.get(buyer.key, `/payment/history/${buyer.wallet}`)).json();
      assert.equal(buyerHistory.walletAddress, buyer.wallet);
      assert.equal(buyerHistory.limit, 50);
      assert.equal(buyerHistory.offset, 0);
      const find = (payments: { paymentId: string }[]) => payments.find((e) => e.paymentId === s.paymentId);
      assert.deepEqual(find(buyerHistory.payments), entry);
      const sentHistory = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent`)).json();
      assert.deepEqual(find(sentHistory.payments), entry);
      for (const url of [
        `/payment/history/${seller.wallet}?type=received`,
        `/payment/history/${family.otherSpelling(seller.wallet)}`,
      ]) {
        const sellerHistory = (await f.get(seller.key, url)).json();
        assert.equal(sellerHistory.total, 1, url);
        assert.equal(sellerHistory.payments[0].sender, buyer.wallet);
        assert.equal(sellerHistory.payments[0].amount, 0.1);
        assert.equal(sellerHistory.payments[0].recipient, undefined);
      }
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

    it(`pays 0.001, 0.1, 0.3 and 100 ${symbol} exactly to the ${family.atom}`, async () => {
      for (const [amount, atoms] of [
        [0.001, unit / 1000n],
        [0.1, unit / 10n],
        [0.3, (3n * unit) / 10n],
        [100, 100n * unit],
      ] as const) {
        const recipient = await f.party();
        const res = await send(buyer, { recipientAddress: recipient.wallet, amount });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().amount, amount);
        assert.equal(await f.family.balance(recipient.wallet), atoms, `${amount} ${symbol}`);
      }
    });

    it('refuses bad requests with the spec’s error body and the field', async () => {
      const cases: [Record<string, unknown>, string, Record<string, string>][] = [
        [
          { recipientAddress: seller.wallet, amount: 0.0009 },
          'INVALID_PARAMETERS',
          { amount: 'must be between 0.001 and 100' },
        ],
        [
          { recipientAddress: seller.wallet, amount: 100.000000001 },
          'INVALID_PARAMETERS',
          { amount: 'must be between 0.001 and 100' },
        ],
        [
          { recipientAddress: seller.wallet, amount: 1, priorityFee: 0.02 },
          'INVALID_PARAMETERS',
          { priorityFee: 'must be between 0.00001 and 0.01' },
        ],
        [
          { recipientAddress: seller.wallet, amount: 1, resource: 'not a url' },
          'INVALID_PARAMETERS',
          { resource: 'must be a valid uri' },
        ],
        [
          { recipientAddress: seller.wallet, amount: 1, metadata: { blob: 'x'.repeat(5000) } },
          'INVALID_PARAMETERS',
          { metadata: 'must be at most 4096 bytes as JSON' },
        ],
        [
          { recipientAddress: seller.wallet, amount: '1' },
          'INVALID_PARAMETERS',
          { amount: 'must be a number' },
        ],
        [{ amount: 1 }, 'INVALID_PARAMETERS', { recipientAddress: 'is required' }],
        [
          { recipientAddress: buyer.wallet, amount: 1 },
          'INVALID_RECIPIENT',
          { recipientAddress: 'must differ from walletAddress' },
        ],
        ...family.familyBadRequests({ buyer, seller }),
      ];
      for (const [body, code, details] of cases) {
        const res = await send(buyer, body);
        assert.equal(res.statusCode, 400, JSON.stringify(body));
        assert.equal(res.json().success, false);
        assert.equal(res.json().error.code, code, JSON.stringify(body));
        assert.deepEqual(res.json().error.details, details, JSON.stringify(body));
      }
    });

    it('refuses to spend what the wallet does not hold, before signing, naming the need', async () => {
      const poor = await f.party(unit / 2n);
      const res = await send(poor, { recipientAddress: seller.wallet, amount: 0.5 });
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
      assert.match(res.json().error.message, family.shortfall);
      assert.equal(await f.family.balance(poor.wallet), unit / 2n, 'nothing moved');
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
        chain: f.family.chain,
        address: seller.wallet,
      });
      assert.equal(watch.statusCode, 409, 'cannot register another account’s wallet as watch-only');
      assert.equal(watch.json().error.code, 'WALLET_ALREADY_REGISTERED');
    });

    it('refuses proofs that are malformed, forged, for someone else, too small or for another resource, without using them up', async () => {
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
        [seller, { expectedAmount: 0.011 }, 'PAYMENT_VERIFICATION_FAILED', 'amount_too_low'],
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
      const payer = await f.party(5n * unit);
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

    it('answers a retry with the same Idempotency-Key without paying twice', async () => {
      const recipient = await f.party();
      const body = { recipientAddress: recipient.wallet, amount: 0.005 };
      const first = await send(buyer, body, { 'idempotency-key': 'order-7' });
      const again = await send(buyer, body, { 'idempotency-key': 'order-7' });
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(again.statusCode, 200);
      assert.deepEqual(again.json(), first.json());
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(await f.family.balance(recipient.wallet), unit / 200n, 'paid once');
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

    family.familyTests(() => ({ raw, f, buyer, seller, send }));
  });
}

const SOLANA: CustodialFamily<PaymentFixture> = {
  name: 'Solana',
  symbol: 'SOL',
  start: () => startPaymentFixture(),
  shared: onSolana,
  atom: 'lamport',
  signature: /^[1-9A-HJ-NP-Za-km-z]{64,88}$/,
  estimatedConfirmation: '1-2 seconds',
  checkLanded: async (raw, s) => {
    const tx = await raw.chain.adapter.getTransaction(s.signature);
    assert.ok(tx);
    assert.deepEqual(tx.memos, [s.paymentId], 'the memo carries the paymentId');
  },
  feeIs: 'the transaction fee',
  deepen: async () => undefined,
  otherSpelling: (address) => address,
  shortfall: /need 0\.500005 SOL; the wallet holds 0\.5 SOL/,
  familyBadRequests: ({ seller }) => [
    [
      { recipientAddress: seller.wallet, amount: 1.0000000001 },
      'INVALID_PARAMETERS',
      { amount: 'has more than 9 decimal places (SOL has 9 decimals)' },
    ],
    [
      { recipientAddress: 'nope', amount: 1 },
      'INVALID_RECIPIENT',
      { recipientAddress: 'must be a Solana address' },
    ],
    [
      { recipientAddress: `0x${'1'.repeat(40)}`, amount: 1 },
      'INVALID_RECIPIENT',
      { recipientAddress: 'must be a Solana address' },
    ],
    [
      { recipientAddress: '11111111111111111111111111111111', amount: 1 },
      'INVALID_RECIPIENT',
      { recipientAddress: 'is the System Program' },
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
  ],
  familyTests: solanaOnly,
};

function solanaOnly(suite: () => Suite<PaymentFixture>): void {
  it('refuses a Solana sysvar or program as recipient with 400 INVALID_RECIPIENT, before signing or storing', async () => {
    const { f, send } = suite();
    const payer = await f.party(f.family.unit);
    const before = await f.family.balance(payer.wallet);
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
    assert.equal(await f.family.balance(payer.wallet), before, 'no fee paid');
  });

  it('answers concurrent sends beyond the balance 422, naming each failed payment it recorded, and pays no fee for them', async () => {
    const { f, seller, send } = suite();
    const poor = await f.party(f.family.unit / 20n);
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
    for (const res of paid) fees += await f.family.feeOf(res.json().signature);
    assert.equal(await f.family.balance(poor.wallet), 10_000_000n - fees, 'only the four paid');
  });

  // The two Idempotency-Key recoveries below wait for a lapsed claim (about 10 s each). What they check is
  // the gateway's idempotency store, the same for every family, so they run on one family only.
  it('answers a receive retried with its Idempotency-Key after the first answer was lost with the payment it recorded, not "already used"', {
    timeout: 60_000,
  }, async () => {
    const { f, buyer, seller, send } = suite();
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
    const { f, buyer, send } = suite();
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
    assert.equal(await f.family.balance(recipient.wallet), 3_000_000n, 'paid once');
  });
}

const EVM: CustodialFamily<EvmPaymentFixture> = {
  name: 'EVM (anvil)',
  symbol: 'ETH',
  start: () => startEvmPaymentFixture(),
  shared: onEvm,
  atom: 'wei',
  signature: /^0x[0-9a-f]{64}$/,
  estimatedConfirmation: '2-15 seconds',
  checkLanded: async (raw, s) => {
    const receipt = await raw.anvil.getTransactionReceipt({ hash: s.signature as Hex });
    const tx = await raw.anvil.getTransaction({ hash: s.signature as Hex });
    assert.equal(Number(receipt.blockNumber), s.blockHeight);
    assert.deepEqual(
      decodeTransferNote(tx.input),
      { memo: s.paymentId },
      'the calldata carries the paymentId',
    );
  },
  feeIs: 'gas used × effective gas price',
  deepen: async (raw) => {
    await raw.anvil.mine({ blocks: 2 });
    return 3;
  },
  otherSpelling: (address) => address.toLowerCase(),
  shortfall: /^Not enough funds: the payment and its fees need 0\.5\d* ETH; the wallet holds 0\.5 ETH\.$/,
  familyBadRequests: () => [
    // A Solana address (the System Program's): the wrong family.
    [
      { recipientAddress: '11111111111111111111111111111111', amount: 1 },
      'INVALID_RECIPIENT',
      { recipientAddress: 'must be an EVM address' },
    ],
  ],
  familyTests: evmOnly,
};

function evmOnly(suite: () => Suite<EvmPaymentFixture>): void {
  const ETH = 10n ** 18n;

  it('creates custodial EVM wallets with EIP-55 addresses and lists their ETH balances', async () => {
    const { f } = suite();
    // A buyer of its own: the suite's has paid by now, and this checks the balance it was given.
    const buyer = await f.party(250n * ETH);
    assert.match(buyer.wallet, /^0x[0-9a-fA-F]{40}$/);
    assert.notEqual(buyer.wallet, buyer.wallet.toLowerCase(), 'checksummed');
    const listed = (await f.get(buyer.key, '/wallets')).json().wallets;
    assert.equal(listed.length, 1);
    assert.deepEqual(
      { ...listed[0], createdAt: 0 },
      {
        address: buyer.wallet,
        chain: 'evm',
        network: 'eip155:31337',
        watchOnly: false,
        createdAt: 0,
        label: null,
        balance: 250,
        currency: 'ETH',
        tokens: [],
      },
    );
  });

  it('refuses a proof for more than was paid, and pays lower-case addresses to the same account', async () => {
    const { f, seller, buyer, send } = suite();
    const sent = (await send(buyer, { recipientAddress: seller.wallet.toLowerCase(), amount: 0.002 })).json();
    assert.equal(sent.recipient, seller.wallet, 'stored in checksum case');
    const tooMuch = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: sent.paymentProof,
      expectedAmount: 0.003,
    });
    assert.equal(tooMuch.statusCode, 422);
    assert.equal(tooMuch.json().error.details.paymentProof, 'amount_too_low');
    const ok = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet.toLowerCase(),
      paymentProof: sent.paymentProof,
      expectedAmount: 0.002,
    });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  it('refuses amounts out of bounds or with more decimals than wei has, before anything is signed', async () => {
    const { f, buyer, seller } = suite();
    const sentBefore = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent`)).json().total;
    for (const text of [
      '100.000000000000000001',
      '1.0000000000000000001',
      '0.0000000000000000001',
      '0.0009',
      '100.1',
    ]) {
      const response = await f.gw.app.inject({
        method: 'POST',
        url: '/payment/send',
        headers: { authorization: `Bearer ${buyer.key}`, 'content-type': 'application/json' },
        payload: `{"walletAddress":"${buyer.wallet}","recipientAddress":"${seller.wallet}","amount":${text}}`,
      });
      assert.equal(response.statusCode, 400, text);
      assert.equal(response.json().error.code, 'INVALID_PARAMETERS');
      assert.ok(response.json().error.details.amount, text);
    }
    const history = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent`)).json();
    assert.equal(history.total, sentBefore, 'no payment was recorded');
  });

  it('refuses a recipient contract that reverts when paid (the USDC token) before signing: INVALID_RECIPIENT, not 500', async () => {
    const { raw, f, buyer, send } = suite();
    const sentBefore = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent`)).json().total;
    const res = await send(buyer, { recipientAddress: raw.evm.usdc.address, amount: 0.001 });
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(
      [res.json().error.code, res.json().error.details],
      ['INVALID_RECIPIENT', { recipientAddress: 'is a contract that does not accept the transfer' }],
    );
    const history = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent`)).json();
    assert.equal(history.total, sentBefore, 'no payment was recorded');
  });

  it('refuses a mixed-case recipient whose EIP-55 checksum does not match (a typo) before signing; one in a single case is paid', async () => {
    const { f, buyer, seller, send } = suite();
    const sentBefore = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent`)).json().total;
    const at = seller.wallet.slice(2).search(/[a-fA-F]/) + 2;
    const letter = seller.wallet.charAt(at);
    const swapped = letter === letter.toUpperCase() ? letter.toLowerCase() : letter.toUpperCase();
    const mistyped = `${seller.wallet.slice(0, at)}${swapped}${seller.wallet.slice(at + 1)}`;
    const res = await send(buyer, { recipientAddress: mistyped, amount: 0.001 });
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(
      [res.json().error.code, res.json().error.details],
      [
        'INVALID_RECIPIENT',
        { recipientAddress: 'mixes upper and lower case, but not as its EIP-55 checksum does' },
      ],
    );
    const history = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent`)).json();
    assert.equal(history.total, sentBefore, 'no payment was recorded');
    const lower = await send(buyer, { recipientAddress: seller.wallet.toLowerCase(), amount: 0.001 });
    assert.equal(lower.statusCode, 200, lower.body);
    assert.equal(lower.json().recipient, seller.wallet);
  });

  it('refuses to spend what the wallet does not hold before taking a nonce: the next send takes it', async () => {
    const { raw, f, seller, send } = suite();
    const poor = await f.party(ETH / 2n);
    const res = await send(poor, { recipientAddress: seller.wallet, amount: 0.5 });
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
    assert.equal(await f.family.balance(poor.wallet), ETH / 2n, 'nothing moved');
    const ok = await send(poor, { recipientAddress: seller.wallet, amount: 0.1 });
    assert.equal(ok.statusCode, 200, ok.body);
    const tx = await raw.anvil.getTransaction({ hash: ok.json().signature as Hex });
    assert.equal(tx.nonce, 0, 'the refused send left no gap');
  });

  it('names the whole shortfall, amount and fees, in INSUFFICIENT_BALANCE however large the gap, as on Solana', async () => {
    const { f, seller } = suite();
    // Only a gap within the fees was named: for more, the node refused to estimate the gas, and the answer
    // was the bare 'Not enough funds for the payment plus fees.' without details.
    const holds: [bigint, number, string][] = [
      [ETH / 2n, 0.6, '0.5'],
      [ETH / 100n, 50, '0.01'],
      [0n, 1, '0'],
    ];
    for (const [balance, amount, held] of holds) {
      const poor = await f.party(balance);
      for (const route of ['/payment/send', '/transaction/send']) {
        const res = await f.post(poor.key, route, {
          walletAddress: poor.wallet,
          recipientAddress: seller.wallet,
          amount,
        });
        assert.equal(res.statusCode, 422, res.body);
        const { code, message, details } = res.json().error;
        assert.equal(code, 'INSUFFICIENT_BALANCE');
        const need = /^needs (\d+(?:\.\d+)?) ETH including fees$/.exec(details.walletAddress)?.[1];
        assert.ok(need !== undefined, `${route}: ${res.body}`);
        // The amount and a fee (a transfer with a memo: under 0.001 ETH at anvil's prices).
        assert.ok(Number(need) > amount && Number(need) < amount + 0.001, `${route}: needs ${need}`);
        assert.equal(
          message,
          `Not enough funds: the payment and its fees need ${need} ETH; the wallet holds ${held} ETH.`,
        );
      }
      assert.equal(await f.family.balance(poor.wallet), balance, 'nothing moved');
      assert.equal(
        (await f.get(poor.key, `/payment/history/${poor.wallet}`)).json().total,
        0,
        'nothing stored',
      );
    }
  });

  it('gives 50 concurrent sends from one wallet 50 consecutive nonces, all mined, no gaps', async () => {
    const { raw, f, send } = suite();
    const SENDS = 50;
    // Premium: 50 sends and 100 status reads are over the Standard plan's 100 requests a minute.
    const payer = await f.party(10n * ETH, 'premium');
    const recipient = await f.party();
    const sends = await Promise.all(
      Array.from({ length: SENDS }, () => send(payer, { recipientAddress: recipient.wallet, amount: 0.01 })),
    );
    for (const response of sends) assert.equal(response.statusCode, 200, response.body);
    const nonces = await Promise.all(
      sends.map(async (r) => (await raw.anvil.getTransaction({ hash: r.json().signature as Hex })).nonce),
    );
    assert.deepEqual(
      [...nonces].sort((a, b) => a - b),
      Array.from({ length: SENDS }, (_, i) => i),
    );
    // A send answered `submitted` may still wait in the node's queue behind a lower nonce, or need the
    // reconciler to offer it again, or to replace it: anvil's pool now and then strands a send added
    // while the one before it is mined, and every later one waits behind it (CI: 19 of 50 mined, the
    // other 31 held for good). A pass finds it and replaces it; the bound is in passes, not in time.
    const mined = () => raw.anvil.getTransactionCount({ address: payer.wallet as Hex });
    let passes = 0;
    for (; passes < 30 && (await mined()) < SENDS; passes++) {
      await raw.reconciler('worker-evm').runOnce();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const pool = await raw.anvil.getTxpoolStatus();
    assert.equal(
      await mined(),
      SENDS,
      `sends mined after ${passes} reconciler passes; the node's pool: ${JSON.stringify(pool)}`,
    );
    for (const r of sends) {
      const status = (await f.get(payer.key, `/payment/status/${r.json().paymentId}`)).json().status;
      assert.ok(status === 'confirmed' || status === 'submitted', status);
    }
    await raw.reconciler('worker-evm').runOnce();
    for (const r of sends) {
      assert.equal(
        (await f.get(payer.key, `/payment/status/${r.json().paymentId}`)).json().status,
        'confirmed',
      );
    }
    assert.equal(await f.family.balance(recipient.wallet), (BigInt(SENDS) * ETH) / 100n);
  });
}

custodialPayments(SOLANA);
custodialPayments(EVM);
