import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getCompiledTransactionMessageDecoder, getTransactionDecoder } from '@solana/kit';
import { bytesToHex, getAddress, type Hex, parseTransaction, serializeTransaction } from 'viem';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { decodeTransferNote } from '../../../src/chains/evm/transfer-calldata.ts';
import { SOLANA_RESERVED_ACCOUNTS } from '../../../src/chains/solana/reserved-accounts.ts';
import { toChainError } from '../../../src/chains/solana/solana-errors.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import {
  type EvmLocalWallet,
  newEvmLocalWallet,
  signAndBroadcastEvm,
  signEvm,
} from '../../support/evm-local-signer.ts';
import { type EvmPaymentFixture, startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import { lastCharacterChanged } from '../../support/last-character-changed.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import type { Party } from '../../support/party.ts';
import { type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { type AddressKey, watchAddress } from '../../support/proof-of-control.ts';

const PAYMENT_ID = /^pay_[0-9A-HJKMNP-TV-Z]{26}$/;

type Json = Record<string, unknown>;
type Reply = Awaited<ReturnType<FamilyPaymentFixture['post']>>;

/** What a family's own tests of building and watching get. */
interface Suite<F, K extends AddressKey> {
  readonly raw: F;
  readonly f: FamilyPaymentFixture;
  readonly buyer: { accountId: string; key: string };
  /** The buyer's own wallet: the gateway never holds its key. */
  readonly payer: K;
  readonly seller: Party;
  readonly reconciler: PaymentReconciler;
  build(body: Json, headers?: Record<string, string>): Promise<Reply>;
  status(key: string, paymentId: string): Promise<Json & { status: string }>;
  /** Signs `transaction` (base64) with `key` (the payer's unless given) and broadcasts it, as a caller would. */
  broadcast(transaction: string, key?: K): Promise<string>;
  eventsOf(accountId: string, paymentId: string): Promise<string[]>;
}

/** What a family's own tests of /transaction/receive get besides. */
interface ReceiveSuite<F, K extends AddressKey> extends Suite<F, K> {
  readonly shop: { accountId: string; key: string };
  readonly shopWallet: K;
  paidShop(amount: number): Promise<{ paymentId: string; paymentProof: string; signature: string }>;
  receiveLocally(proof: string, body?: Json): Promise<Reply>;
}

/**
 * Local transaction mode on one chain family: the caller signs with a key the gateway never holds and
 * broadcasts through the chain's RPC; the reconciler watches. What differs between families (how a
 * transaction is read, signed and landed, how the chain moves on) is named here; the checks are the
 * suite's.
 */
interface LocalFamily<F, K extends AddressKey> {
  readonly name: string;
  start(): Promise<F & { close(): Promise<void> }>;
  shared(raw: F): FamilyPaymentFixture;
  adapter(raw: F): ChainAdapter;
  reconciler(raw: F, instanceId: string): PaymentReconciler;
  readonly estimatedConfirmation: string;
  newWallet(): K;
  fundWallet(raw: F, address: string, amount: bigint): Promise<void>;
  /** Signs and broadcasts; resolves once the chain has it (landed on anvil, in the pool on the localnet). */
  broadcast(raw: F, transaction: string, key: K): Promise<string>;
  /** Lets what was broadcast land: a slot on the localnet (whose slots move only when told); nothing on anvil. */
  land(raw: F): Promise<void>;
  /** Moves the chain `blocks` blocks on. */
  advance(raw: F, blocks: number): Promise<void>;
  /** Another way to write the same address that the API must take as that address. */
  otherSpelling(address: string): string;
  /** The family's checks of the unsigned transaction a build answered (`b`): who signs, what it pays, its note. */
  checkUnsigned(raw: F, b: Json, parties: { payer: string; recipient: string }): Promise<void>;
  /** The block height a landed send's status must show; `height` was read just before the build. */
  landedHeight(raw: F, height: bigint, signature: string): Promise<number>;
  /** The family's checks of a landed transaction of a build. */
  checkLanded(raw: F, signature: string, b: Json): Promise<void>;
  /** Deepens a landed payment until it is final: the confirmations its status then shows, when exact. */
  finalize(raw: F): Promise<number | undefined>;
  /** What the family does with a transaction signed after it expired (`b`, signed by `key`). */
  afterExpiry(raw: F, b: Json, broadcast: () => Promise<string>): Promise<void>;
  /** /transaction/send requests this family refuses with 400 for reasons of its own. */
  familyBadRequests(s: { payer: K; seller: Party }): [Json, string, Record<string, string>][];
  /** The family's checks of the receipt transaction /transaction/receive answered (`r`) for `paid`. */
  checkReceipt(raw: F, r: Json, shop: string, paid: { paymentId: string }): Promise<void>;
  /** The family's checks of that receipt landed as `signature`. */
  checkReceiptLanded(
    raw: F,
    signature: string,
    r: Json,
    shop: string,
    paid: { paymentId: string },
  ): Promise<void>;
  familyTests(suite: () => Suite<F, K>): void;
  familyReceiveTests(suite: () => ReceiveSuite<F, K>): void;
}

function localTransactionMode<F, K extends AddressKey>(family: LocalFamily<F, K>): void {
  describe(`local transaction mode on ${family.name}: /transaction/send, watching, local-mode proofs, /transaction/receive`, () => {
    let raw: F & { close(): Promise<void> };
    let f: FamilyPaymentFixture;
    let unit: bigint;
    let buyer: { accountId: string; key: string };
    let payer: K;
    let seller: Party;
    let reconciler: PaymentReconciler;

    before(async () => {
      raw = await family.start();
      f = family.shared(raw);
      unit = f.family.unit;
      buyer = await f.gw.newCaller();
      payer = family.newWallet();
      await family.fundWallet(raw, payer.address, 20n * unit);
      seller = await f.party();
      reconciler = family.reconciler(raw, 'local-worker');
    });
    after(() => raw.close());

    const build = (body: Json, headers?: Record<string, string>) =>
      f.post(buyer.key, '/transaction/send', { walletAddress: payer.address, ...body }, headers);
    const status = async (key: string, paymentId: string) =>
      (await f.get(key, `/payment/status/${paymentId}`)).json();
    const broadcast = (transaction: string, key: K = payer) => family.broadcast(raw, transaction, key);
    const eventsOf = async (accountId: string, paymentId: string) =>
      (await f.gw.store.events.listAfter(accountId, 0, 1000))
        .filter((e) => e.paymentId === paymentId)
        .map((e) => e.type);
    const suite = (): Suite<F, K> => ({
      raw,
      f,
      buyer,
      payer,
      seller,
      reconciler,
      build,
      status,
      broadcast,
      eventsOf,
    });

    it('builds an unsigned transaction; once signed and broadcast by the caller it confirms, then finalizes', async () => {
      const before = Date.now();
      const height = await family.adapter(raw).getBlockHeight();
      // Asked in another spelling (EVM: lower case): stored, proven and matched on chain as written canonically.
      const res = await build({
        walletAddress: family.otherSpelling(payer.address),
        recipientAddress: family.otherSpelling(seller.wallet),
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
      assert.equal(b.network, f.network);
      assert.equal(b.estimatedConfirmation, family.estimatedConfirmation);
      assert.equal(b.lastValidBlockHeight, Number(height) + 150);
      // The chain's expiry is by height, which no time moves here: the 60 s bound applies.
      assert.ok(b.expiresAt >= before + 60_000 && b.expiresAt <= Date.now() + 60_000, String(b.expiresAt));
      await family.checkUnsigned(raw, b, { payer: payer.address, recipient: seller.wallet });

      const check = await f.gw.services.proofs.check(b.paymentProof);
      assert.ok(check.valid);
      const { kid: _kid, iat, ...claims } = check.claims;
      assert.deepEqual(claims, {
        v: 1,
        pid: b.paymentId,
        net: f.network,
        ref: b.reference,
        from: payer.address,
        to: seller.wallet,
        amt: (unit / 4n).toString(),
        res: 'https://api.example.com/report',
      });
      assert.ok(iat >= before);

      await reconciler.runOnce();
      const pending = await status(buyer.key, b.paymentId);
      assert.equal(pending.status, 'pending');
      assert.equal(pending.signature, null);

      const signature = await broadcast(b.transaction);
      await family.land(raw);
      await reconciler.runOnce();
      const confirmed = await status(buyer.key, b.paymentId);
      assert.deepEqual(
        { ...confirmed, timestamp: 0 },
        {
          paymentId: b.paymentId,
          type: 'sent',
          network: f.network,
          signature,
          status: 'confirmed',
          amount: 0.25,
          sender: payer.address,
          recipient: seller.wallet,
          resource: 'https://api.example.com/report',
          blockHeight: await family.landedHeight(raw, height, signature),
          confirmations: confirmed.confirmations,
          timestamp: 0,
          metadata: { referenceId: 'order-9' },
          asset: { ...f.native, address: null },
        },
      );
      assert.equal(await f.family.balance(seller.wallet), unit / 4n);
      await family.checkLanded(raw, signature, b);

      // History finds it under the payer's address however it is spelled, like the payment's own wallet.
      for (const address of [payer.address, family.otherSpelling(payer.address)]) {
        const history = (await f.get(buyer.key, `/payment/history/${address}`)).json();
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
          network: f.network,
          asset: { ...f.native, address: null },
        });
      }

      const confirmations = await family.finalize(raw);
      await reconciler.runOnce();
      const finalized = await status(buyer.key, b.paymentId);
      assert.equal(finalized.status, 'finalized');
      if (confirmations !== undefined) {
        assert.equal(finalized.confirmations, confirmations, 'its own block and those on top');
      }
      assert.deepEqual(await eventsOf(buyer.accountId, b.paymentId), [
        'payment.confirmed',
        'payment.finalized',
      ]);
    });

    it('expires a transaction never sent once its last valid block height is passed, and it moves nothing', async () => {
      const recipient = await f.party();
      const b = (await build({ recipientAddress: recipient.wallet, amount: 0.5 })).json();
      await reconciler.runOnce();
      assert.equal((await status(buyer.key, b.paymentId)).status, 'pending');
      await family.advance(raw, 151);
      await reconciler.runOnce();
      assert.equal((await status(buyer.key, b.paymentId)).status, 'expired');
      assert.deepEqual(await eventsOf(buyer.accountId, b.paymentId), ['payment.expired']);
      await family.afterExpiry(raw, b, () => broadcast(b.transaction));
      await reconciler.runOnce();
      assert.equal((await status(buyer.key, b.paymentId)).status, 'expired');
      assert.equal(await f.family.balance(recipient.wallet), 0n);
    });

    it('never confirms a tampered transaction that reuses the reference with another amount or recipient', async () => {
      const thief = family.newWallet().address;
      const b = (await build({ recipientAddress: seller.wallet, amount: 0.01 })).json();
      for (const [to, amount] of [
        [thief, unit / 100n],
        [seller.wallet, unit / 1000n],
      ] as const) {
        const forged = await family.adapter(raw).prepareTransfer({
          from: payer.address,
          to,
          amount,
          memo: b.paymentId,
          reference: b.reference,
        });
        await broadcast(Buffer.from(forged.unsigned).toString('base64'));
      }
      await family.land(raw);
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
      await family.advance(raw, 151);
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
      await family.land(raw);
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
        net: f.network,
        sig: signature,
        from: payer.address,
        to: seller.wallet,
        amt: ((unit * 2n) / 100n).toString(),
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
      assert.equal(first.statusCode, 200, first.body);
      assert.deepEqual(again.json(), first.json());
      assert.equal(again.headers['idempotent-replayed'], 'true');
    });

    it('refuses bad requests like /payment/send does, and a payer that cannot pay, before recording anything', async () => {
      const cases: [Json, string, Record<string, string>][] = [
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
          { recipientAddress: seller.wallet, amount: 1, priorityFee: 0.1 },
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
          { recipientAddress: family.otherSpelling(payer.address), amount: 1 },
          'INVALID_RECIPIENT',
          { recipientAddress: 'must differ from walletAddress' },
        ],
        ...(['xyz', '0x1234'].map((walletAddress) => [
          { walletAddress, recipientAddress: seller.wallet, amount: 1 },
          'INVALID_PARAMETERS',
          { walletAddress: 'must be a Solana (base58) or EVM (0x…) address' },
        ]) as [Json, string, Record<string, string>][]),
        ...family.familyBadRequests({ payer, seller }),
      ];
      for (const [body, code, details] of cases) {
        const res = await build(body);
        assert.equal(res.statusCode, 400, JSON.stringify(body));
        assert.equal(res.json().error.code, code, JSON.stringify(body));
        assert.deepEqual(res.json().error.details, details, JSON.stringify(body));
      }
      const poor = family.newWallet().address;
      const res = await build({ walletAddress: poor, recipientAddress: seller.wallet, amount: 1 });
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
      // Nothing was recorded: the account has no payment from that address, which is not its wallet.
      const history = await f.get(buyer.key, `/payment/history/${poor}`);
      assert.equal(history.statusCode, 403, history.body);
    });

    family.familyTests(suite);

    describe('/transaction/receive: the seller signs a receipt with its own key', () => {
      let shop: { accountId: string; key: string };
      let shopWallet: K;

      before(async () => {
        shop = await f.gw.newCaller();
        shopWallet = family.newWallet();
        const watched = await watchAddress(f.gw, shop.key, shopWallet, {
          spelling: family.otherSpelling(shopWallet.address),
        });
        assert.equal(watched.statusCode, 200, watched.body);
        assert.equal(watched.json().address, shopWallet.address);
        await family.fundWallet(raw, shopWallet.address, unit);
      });

      /** A local-mode payment to the shop, signed and landed. */
      async function paidShop(amount: number) {
        const b = (await build({ recipientAddress: shopWallet.address, amount })).json();
        const signature = await broadcast(b.transaction);
        await family.land(raw);
        return { ...b, signature } as { paymentId: string; paymentProof: string; signature: string };
      }
      const receiveLocally = (proof: string, body: Json = {}) =>
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
          walletAddress: family.otherSpelling(shopWallet.address),
        });
        assert.equal(res.statusCode, 200, res.body);
        const r = res.json();
        assert.equal(r.verified, true);
        assert.match(r.paymentId, PAYMENT_ID);
        assert.equal(r.status, 'pending');
        assert.equal(r.signature, paid.signature);
        assert.equal(r.amountReceived, 0.05);
        assert.equal(r.sender, payer.address);
        assert.equal(r.network, f.network);
        await family.checkReceipt(raw, r, shopWallet.address, paid);

        // Not consumed yet: verification still says yes.
        const verify = await f.post(shop.key, '/v1/payments/verify', {
          payment_proof: Buffer.from(paid.paymentProof).toString('base64'),
          amount: Number((unit * 5n) / 100n),
          recipient: shopWallet.address,
        });
        assert.deepEqual(verify.json(), {
          verified: true,
          transaction_id: paid.signature,
          network: f.network,
          asset: { ...f.native, address: null },
        });

        await reconciler.runOnce();
        assert.equal((await status(shop.key, r.paymentId)).status, 'pending', 'no receipt on chain yet');
        const receiptSignature = await broadcast(r.transaction, shopWallet);
        await family.land(raw);
        await reconciler.runOnce();
        const seen = await status(shop.key, r.paymentId);
        assert.equal(seen.status, 'confirmed');
        assert.equal(seen.type, 'received');
        assert.equal(seen.signature, paid.signature);
        assert.equal(seen.sender, payer.address);
        assert.equal(seen.recipient, shopWallet.address);
        await family.checkReceiptLanded(raw, receiptSignature, r, shopWallet.address, paid);
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
        await family.advance(raw, 151);
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

      it('refuses a proof for more than was paid, for another wallet, or for a wallet not the caller’s', async () => {
        const paid = await paidShop(0.02);
        const tooMuch = await receiveLocally(paid.paymentProof, { expectedAmount: 0.021 });
        assert.equal(tooMuch.statusCode, 422);
        assert.equal(tooMuch.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
        assert.deepEqual(tooMuch.json().error.details, { paymentProof: 'amount_too_low' });

        const otherWallet = family.newWallet();
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

      family.familyReceiveTests(() => ({ ...suite(), shop, shopWallet, paidShop, receiveLocally }));
    });
  });
}

type SolanaKey = { readonly address: string; readonly secretKey: Uint8Array };

const SOLANA: LocalFamily<PaymentFixture, SolanaKey> = {
  name: 'Solana (slots advanced by the test)',
  start: () => startPaymentFixture({ chain: { slotMs: 0, finalizedDepth: 2 } }),
  shared: onSolana,
  adapter: (raw) => raw.chain.adapter,
  reconciler: (raw, instanceId) =>
    new PaymentReconciler({
      store: raw.gw.store,
      networks: raw.gw.networks,
      ledger: raw.gw.services.ledger,
      instanceId,
      recheckMs: 0,
    }),
  estimatedConfirmation: '1-2 seconds',
  newWallet: generateSolanaKeypair,
  fundWallet: async (raw, address, amount) => {
    raw.chain.localnet.airdrop(address, amount);
    raw.chain.localnet.advanceSlots(1);
  },
  broadcast: (raw, transaction, key) =>
    signAndBroadcast(raw.chain.localnet.rpcUrl, transaction, key.secretKey),
  land: async (raw) => raw.chain.localnet.advanceSlots(1),
  advance: async (raw, blocks) => raw.chain.localnet.advanceSlots(blocks),
  otherSpelling: (address) => address,
  checkUnsigned: async (_raw, b, { payer }) => {
    const tx = getTransactionDecoder().decode(Buffer.from(b.transaction as string, 'base64'));
    assert.deepEqual(Object.entries(tx.signatures), [[payer, null]], 'one empty slot: the payer');
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    assert.equal(message.version, 0);
    assert.equal(message.staticAccounts[0], payer, 'fee payer');
    const refIndex = message.staticAccounts.indexOf(b.reference as (typeof message.staticAccounts)[number]);
    assert.ok(
      refIndex >= message.staticAccounts.length - message.header.numReadonlyNonSignerAccounts,
      'reference is read-only',
    );
    assert.equal(
      message.instructions.length,
      3,
      'compute-unit limit, transfer, memo (no price: no recent fees)',
    );
  },
  landedHeight: async (_raw, height) => Number(height) + 1,
  checkLanded: async (raw, signature, b) => {
    const onChain = await raw.chain.adapter.getTransaction(signature);
    assert.deepEqual(onChain?.memos, [b.paymentId]);
  },
  finalize: async (raw) => {
    raw.chain.localnet.advanceSlots(3);
    return undefined;
  },
  afterExpiry: async (raw, _b, broadcastIt) => {
    await assert.rejects(
      broadcastIt(),
      (error: unknown) => toChainError(error).kind === 'blockhash_expired',
      'the blockhash is gone: the chain refuses it',
    );
    raw.chain.localnet.advanceSlots(1);
  },
  familyBadRequests: ({ seller }) => [
    [
      { recipientAddress: 'nope', amount: 1 },
      'INVALID_RECIPIENT',
      { recipientAddress: 'must be a Solana address' },
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
  ],
  checkReceipt: async (_raw, r, shop) => {
    const message = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(Buffer.from(r.transaction as string, 'base64')).messageBytes,
    );
    assert.equal(message.staticAccounts[0], shop, 'the seller pays for its receipt');
  },
  checkReceiptLanded: async (raw, signature, r, shop, paid) => {
    const receipt = await raw.chain.adapter.getTransaction(signature);
    assert.equal(receipt?.feePayer, shop);
    assert.deepEqual(receipt?.memos, [`gate402 receipt ${r.paymentId} accepts ${paid.paymentId}`]);
  },
  familyTests: solanaOnly,
  familyReceiveTests: () => {},
};

function solanaOnly(suite: () => Suite<PaymentFixture, SolanaKey>): void {
  it('keeps a transaction pending past expiresAt while its blockhash is valid, and confirms it when it lands', async () => {
    const { raw, f, buyer, build, status, broadcast, eventsOf } = suite();
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
    raw.chain.localnet.advanceSlots(1);
    await late.runOnce();
    const confirmed = await status(buyer.key, b.paymentId);
    assert.equal(confirmed.status, 'confirmed');
    assert.equal(confirmed.signature, signature);
    assert.equal(await f.family.balance(recipient.wallet), 300_000_000n);
    assert.deepEqual(
      await eventsOf(buyer.accountId, b.paymentId),
      ['payment.confirmed'],
      'never called expired',
    );
  });

  it('refuses a Solana sysvar or program as recipient or payer with 400, before building or storing anything', async () => {
    const { f, buyer, payer, seller } = suite();
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
}

const EVM: LocalFamily<EvmPaymentFixture, EvmLocalWallet> = {
  name: 'EVM (anvil)',
  start: () => startEvmPaymentFixture(),
  shared: onEvm,
  adapter: (raw) => raw.chain,
  reconciler: (raw, instanceId) => raw.reconciler(instanceId),
  estimatedConfirmation: '2-15 seconds',
  newWallet: newEvmLocalWallet,
  fundWallet: async (raw, address, amount) => {
    await raw.chain.faucet?.fundNative(address, amount);
  },
  broadcast: (raw, transaction, key) =>
    signAndBroadcastEvm(raw.evm.anvil.rpcUrl, transaction, key.privateKey),
  land: async () => {},
  advance: async (raw, blocks) => raw.anvil.mine({ blocks }),
  otherSpelling: (address) => address.toLowerCase(),
  checkUnsigned: async (raw, b, { payer, recipient }) => {
    assert.match(b.reference as string, /^0x[0-9a-fA-F]{40}$/);
    const nonce = await raw.anvil.getTransactionCount({ address: payer as Hex, blockTag: 'pending' });
    const tx = parseTransaction(bytesToHex(Buffer.from(b.transaction as string, 'base64')));
    assert.equal(tx.type, 'eip1559');
    assert.equal(tx.chainId, 31337);
    assert.equal(tx.to && getAddress(tx.to), recipient);
    assert.equal(
      tx.value,
      (10n ** 18n * BigInt(Math.round((b.amount as number) * 1000))) / 1000n,
      'the amount in wei',
    );
    assert.equal(tx.nonce, nonce, "the sender's next nonce");
    assert.equal(tx.r, undefined, 'unsigned');
    assert.ok((tx.maxFeePerGas ?? 0n) >= (tx.maxPriorityFeePerGas ?? 0n));
    assert.deepEqual(decodeTransferNote(tx.data ?? '0x'), { reference: b.reference, memo: b.paymentId });
  },
  landedHeight: async (raw, _height, signature) =>
    Number((await raw.anvil.getTransactionReceipt({ hash: signature as Hex })).blockNumber),
  checkLanded: async () => {},
  finalize: async (raw) => {
    // anvil calls a block finalized 64 blocks deep.
    await raw.anvil.mine({ blocks: 64 });
    // The status read caches the chain's height for 400 ms.
    await new Promise((resolve) => setTimeout(resolve, 450));
    return 65;
  },
  afterExpiry: async () => {},
  familyBadRequests: ({ seller }) => [
    [
      { recipientAddress: '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin', amount: 1 },
      'INVALID_RECIPIENT',
      { recipientAddress: 'must be an EVM address' },
    ],
    [
      { recipientAddress: caseOfOneLetterSwapped(seller.wallet), amount: 1 },
      'INVALID_RECIPIENT',
      { recipientAddress: 'mixes upper and lower case, but not as its EIP-55 checksum does' },
    ],
  ],
  checkReceipt: async (_raw, r, shop, paid) => {
    const receipt = parseTransaction(bytesToHex(Buffer.from(r.transaction as string, 'base64')));
    assert.equal(receipt.type, 'eip1559');
    assert.equal(receipt.to && getAddress(receipt.to), shop, 'a transfer to itself');
    assert.equal(receipt.value ?? 0n, 0n, 'of nothing');
    assert.deepEqual(decodeTransferNote(receipt.data ?? '0x'), {
      reference: r.reference,
      memo: `gate402 receipt ${r.paymentId} accepts ${paid.paymentId}`,
    });
  },
  checkReceiptLanded: async () => {},
  familyTests: evmOnly,
  familyReceiveTests: evmReceiveOnly,
};

const ETH = 10n ** 18n;

/** A worker whose clock is 61 s ahead: past expiresAt, still within lastValidBlockHeight. */
const lateReconciler = (f: FamilyPaymentFixture) =>
  new PaymentReconciler({
    store: f.gw.store,
    networks: f.gw.networks,
    ledger: f.gw.services.ledger,
    instanceId: 'evm-local-late',
    recheckMs: 0,
    lateLandingRecheckMs: 0,
    now: () => Date.now() + 61_000,
  });

function evmOnly(suite: () => Suite<EvmPaymentFixture, EvmLocalWallet>): void {
  it('finds the transaction when the caller re-signs it with another nonce and fees', async () => {
    const { buyer, seller, reconciler, build, status, broadcast } = suite();
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

  it('expires a transaction never broadcast by expiresAt, before its last valid block height', async () => {
    const { f, buyer, seller, reconciler, build, status, eventsOf } = suite();
    const byTime = (await build({ recipientAddress: seller.wallet, amount: 0.6 })).json();
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, byTime.paymentId)).status, 'pending');
    await lateReconciler(f).runOnce();
    const expired = await status(buyer.key, byTime.paymentId);
    assert.equal(expired.status, 'expired');
    assert.equal(expired.signature, null);
    assert.deepEqual(await eventsOf(buyer.accountId, byTime.paymentId), ['payment.expired']);
  });

  it('does not expire a transaction broadcast in time that is mined after expiresAt', async () => {
    const { raw, f, buyer, payer, seller, build, status, eventsOf } = suite();
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.007 })).json();
    // A busy chain: the transaction waits in the pool past expiresAt.
    await raw.anvil.setAutomine(false);
    try {
      const hash = await raw.anvil.sendRawTransaction({
        serializedTransaction: await signEvm(b.transaction, payer.privateKey),
      });
      const late = lateReconciler(f);
      await late.runOnce();
      assert.equal((await status(buyer.key, b.paymentId)).status, 'pending', 'waiting in the pool');
      await raw.anvil.mine({ blocks: 1 });
      await late.runOnce();
      const seen = await status(buyer.key, b.paymentId);
      assert.equal(seen.status, 'confirmed');
      assert.equal(seen.signature, hash);
      assert.deepEqual(await eventsOf(buyer.accountId, b.paymentId), ['payment.confirmed']);
    } finally {
      await raw.anvil.setAutomine(true);
    }
  });

  it('confirms a transaction mined after it was called expired: payment.confirmed follows payment.expired', async () => {
    const { raw, f, buyer, seller, build, status, broadcast, eventsOf } = suite();
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.008 })).json();
    const late = lateReconciler(f);
    await late.runOnce();
    const expired = await status(buyer.key, b.paymentId);
    assert.equal(expired.status, 'expired', 'past expiresAt, nothing waiting in the pool');
    // The caller broadcasts anyway: nothing on EVM refuses signed bytes whose nonce is still unused.
    const hash = await broadcast(b.transaction);
    await late.runOnce();
    const confirmed = await status(buyer.key, b.paymentId);
    assert.equal(confirmed.status, 'confirmed');
    assert.equal(confirmed.signature, hash);
    const receipt = await raw.anvil.getTransactionReceipt({ hash: hash as Hex });
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

    await raw.anvil.mine({ blocks: 64 });
    await late.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'finalized');
    assert.deepEqual(await eventsOf(buyer.accountId, b.paymentId), [
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
    const { f, buyer, seller, build, status, broadcast } = suite();
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.009 })).json();
    await lateReconciler(f).runOnce();
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
    await lateReconciler(f).runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'confirmed', 'still within 10 minutes');
  });

  describe('POST /v1/payments/verify with EVM proofs (amounts in wei)', () => {
    let custodial: Party;
    let paid: { paymentProof: string; signature: string };
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const verify = (body: Json) =>
      suite().f.post(suite().seller.key, '/v1/payments/verify', {
        payment_proof: b64(paid.paymentProof),
        amount: 100_000_000_000_000_000,
        recipient: suite().seller.wallet,
        ...body,
      });

    before(async () => {
      const { f, seller } = suite();
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
      const { f, seller } = suite();
      for (const body of [{}, { amount: 1 }, { recipient: seller.wallet.toLowerCase() }]) {
        const res = await verify(body);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json(), {
          verified: true,
          transaction_id: paid.signature,
          network: f.network,
          asset: { symbol: 'ETH', address: null, decimals: 18 },
        });
      }
    });

    it('answers verified: false for one wei too many, another recipient, a tampered proof', async () => {
      const cases: [Json, string][] = [
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
      const { f, seller } = suite();
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
      const { f, seller } = suite();
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
}

function evmReceiveOnly(suite: () => ReceiveSuite<EvmPaymentFixture, EvmLocalWallet>): void {
  it('does not expire a receipt broadcast in time that is mined after expiresAt', async () => {
    const { raw, f, shop, shopWallet, status, paidShop, receiveLocally } = suite();
    const paid = await paidShop(0.05);
    const r = (await receiveLocally(paid.paymentProof)).json();
    await raw.anvil.setAutomine(false);
    try {
      await raw.anvil.sendRawTransaction({
        serializedTransaction: await signEvm(r.transaction, shopWallet.privateKey),
      });
      const late = lateReconciler(f);
      await late.runOnce();
      assert.equal((await status(shop.key, r.paymentId)).status, 'pending', 'waiting in the pool');
      await raw.anvil.mine({ blocks: 1 });
      await late.runOnce();
      assert.equal((await status(shop.key, r.paymentId)).status, 'confirmed');
    } finally {
      await raw.anvil.setAutomine(true);
    }
    const again = await receiveLocally(paid.paymentProof);
    assert.deepEqual(again.json().error.details, { paymentProof: 'already_used' });
  });

  it('confirms a receipt mined after it was called expired, consuming the proof then', async () => {
    const { f, shop, shopWallet, status, broadcast, eventsOf, paidShop, receiveLocally } = suite();
    const paid = await paidShop(0.05);
    const r = (await receiveLocally(paid.paymentProof)).json();
    const late = lateReconciler(f);
    await late.runOnce();
    assert.equal((await status(shop.key, r.paymentId)).status, 'expired', 'not broadcast in time');
    await broadcast(r.transaction, shopWallet);
    await late.runOnce();
    assert.equal((await status(shop.key, r.paymentId)).status, 'confirmed');
    assert.deepEqual(await eventsOf(shop.accountId, r.paymentId), ['payment.expired', 'payment.confirmed']);
    const again = await f.post(shop.key, '/payment/receive', {
      walletAddress: shopWallet.address,
      paymentProof: paid.paymentProof,
      expectedAmount: 0.05,
    });
    assert.deepEqual(again.json().error.details, { paymentProof: 'already_used' });
  });

  it('leaves a late receipt expired when the proof was redeemed after the expiry', async () => {
    const { f, shop, shopWallet, status, broadcast, paidShop, receiveLocally } = suite();
    const paid = await paidShop(0.05);
    const r = (await receiveLocally(paid.paymentProof)).json();
    const late = lateReconciler(f);
    await late.runOnce();
    assert.equal((await status(shop.key, r.paymentId)).status, 'expired');
    const redeemed = await f.post(shop.key, '/payment/receive', {
      walletAddress: shopWallet.address,
      paymentProof: paid.paymentProof,
      expectedAmount: 0.05,
    });
    assert.equal(redeemed.statusCode, 200, redeemed.body);
    await broadcast(r.transaction, shopWallet);
    await late.runOnce();
    const receipt = await status(shop.key, r.paymentId);
    assert.equal(receipt.status, 'expired', 'the proof paid once, through the other receive');
  });
}

/** A checksummed address with one letter in the other case: a typo its EIP-55 checksum catches. */
function caseOfOneLetterSwapped(address: string): string {
  const at = address.slice(2).search(/[a-fA-F]/) + 2;
  const letter = address.charAt(at);
  const swapped = letter === letter.toUpperCase() ? letter.toLowerCase() : letter.toUpperCase();
  return `${address.slice(0, at)}${swapped}${address.slice(at + 1)}`;
}

localTransactionMode(SOLANA);
localTransactionMode(EVM);
