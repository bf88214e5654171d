import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';
import { tempDir } from '../../support/databases.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from '../../support/evm-payment-fixture.ts';
import { gate402Json } from '../../support/gate402-cli.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import {
  LAMPORTS,
  type Party,
  type PaymentFixture,
  startPaymentFixture,
} from '../../support/payment-fixture.ts';
import { watchAddress } from '../../support/proof-of-control.ts';
import { openStream, type StreamClient } from '../../support/stream-client.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';
import { svmExactRequirements, svmPayload } from '../../support/x402-buyer.ts';

/**
 * Account isolation, tried the way an attacker would: Bob holds a valid API key (and a dashboard log-in)
 * of his own account and tries to read or change anything of Alice's — by id, by address (in any
 * spelling), through filters, the stream, webhooks, Idempotency-Keys and error answers. Another
 * account's resource must answer exactly like one that does not exist (spec §7; docs/custodial-payments.md, "Isolation").
 * Complements the per-feature checks in custodial-payments, webhooks and dashboard-api tests.
 */

const MISSING_PAYMENT = 'pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB';
const MISSING_WEBHOOK = 'whk_01JD0Q3ZK8M4F6X3V5N7R9T2AB';
const MISSING_DELIVERY = 'dlv_01JD0Q3ZK8M4F6X3V5N7R9T2AB';
const MISSING_EVENT = 'evt_01JD0Q3ZK8M4F6X3V5N7R9T2AB';

/**
 * What a refusal tells its caller, with the ids and addresses it was asked about put aside and the
 * request id (different on every answer) left out: two of these are equal when the answers are.
 */
function refusal(res: { statusCode: number; body: string }, ...asked: string[]) {
  const { success, error } = JSON.parse(res.body) as { success: unknown; error: Record<string, unknown> };
  const { requestId: _requestId, ...rest } = error;
  let text = JSON.stringify({ success, error: rest });
  for (const value of asked) text = text.replaceAll(value, '<asked>');
  return { status: res.statusCode, body: JSON.parse(text) as unknown };
}

const replayed = (res: LightMyRequestResponse) => res.headers['idempotent-replayed'];

async function eventually<T>(
  look: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await look();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('account isolation on Solana: another account’s payments, wallets, keys and events', () => {
  let f: PaymentFixture;
  /** The account under attack. */
  let alice: Party;
  /** The attacker: a valid key and a wallet of his own. */
  let bob: Party;
  /** Alice's counterpart: she pays Carol and is paid by her. */
  let carol: Party;
  /** Alice's own key, which she pays with in local mode; Bob registers its address as his watch-only wallet. */
  let payer: { address: string; secretKey: Uint8Array };
  let url: string;
  const receivers = { alice: new WebhookReceiver(), bob: new WebhookReceiver() };
  const hooks: Record<'alice' | 'bob', { id: string; secret: string }> = {
    alice: { id: '', secret: '' },
    bob: { id: '', secret: '' },
  };
  let bobStream: StreamClient;
  // Alice's requests as she made them (Bob replays them with her Idempotency-Keys), and their answers.
  let aliceSendBody: Record<string, unknown>;
  let aliceSent: { paymentId: string; paymentProof: string };
  let aliceReceiveBody: Record<string, unknown>;
  let aliceReceived: { paymentId: string };
  let aliceLocalBody: Record<string, unknown>;
  let aliceLocal: { paymentId: string; transaction: string };
  let bobSent: { paymentId: string };

  before(async () => {
    f = await startPaymentFixture({
      gateway: { events: { config: { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50 } } },
    });
    alice = await f.party(5, 'premium');
    bob = await f.party(1, 'premium');
    carol = await f.party(2, 'premium');
    payer = generateSolanaKeypair();
    await f.chain.adapter.faucet?.fundNative(payer.address, 2n * LAMPORTS);
    const address = await f.gw.app.listen({ port: 0, host: '127.0.0.1' });
    url = `${address.replace('http', 'ws')}/v1/payments/stream`;

    for (const who of ['alice', 'bob'] as const) {
      const party = who === 'alice' ? alice : bob;
      const created = await f.post(party.key, '/webhooks', { url: await receivers[who].start() });
      assert.equal(created.statusCode, 200, created.body);
      hooks[who] = { id: created.json().id, secret: created.json().secret };
      receivers[who].secret = created.json().secret;
    }
    // Bob watches whatever of Alice's he can name: her local-mode payer's address becomes his
    // watch-only wallet (nobody had registered it; the worst case, where he can sign for it too), and
    // his stream follows her wallets.
    const watched = await watchAddress(f.gw, bob.key, payer);
    assert.equal(watched.statusCode, 200, watched.body);
    bobStream = await openStream(url, { headers: bearer(bob.key) });
    bobStream.send({ type: 'subscribe', wallets: [alice.wallet, payer.address, carol.wallet, bob.wallet] });
    await bobStream.until((c) => c.messages.some((m) => m.type === 'subscribed'));

    // Alice sends, receives and pays in local mode, each with an Idempotency-Key.
    aliceSendBody = {
      walletAddress: alice.wallet,
      recipientAddress: carol.wallet,
      amount: 0.1,
      resource: 'https://api.example.com/alice',
      metadata: { referenceId: 'alice-order-1' },
    };
    const sent = await f.post(alice.key, '/payment/send', aliceSendBody, { 'idempotency-key': 'order-1' });
    assert.equal(sent.statusCode, 200, sent.body);
    aliceSent = sent.json();
    const carolPays = await f.post(carol.key, '/payment/send', {
      walletAddress: carol.wallet,
      recipientAddress: alice.wallet,
      amount: 0.05,
    });
    assert.equal(carolPays.statusCode, 200, carolPays.body);
    aliceReceiveBody = {
      walletAddress: alice.wallet,
      paymentProof: carolPays.json().paymentProof,
      expectedAmount: 0.05,
    };
    const received = await f.post(alice.key, '/payment/receive', aliceReceiveBody, {
      'idempotency-key': 'receipt-1',
    });
    assert.equal(received.statusCode, 200, received.body);
    aliceReceived = received.json();
    aliceLocalBody = { walletAddress: payer.address, recipientAddress: carol.wallet, amount: 0.02 };
    const local = await f.post(alice.key, '/transaction/send', aliceLocalBody, {
      'idempotency-key': 'local-1',
    });
    assert.equal(local.statusCode, 200, local.body);
    aliceLocal = local.json();
    await signAndBroadcast(f.chain.localnet.rpcUrl, aliceLocal.transaction, payer.secretKey);
    const reconciler = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      instanceId: 'isolation-worker',
      recheckMs: 0,
    });
    await eventually(async () => {
      await reconciler.runOnce();
      const status = (await f.get(alice.key, `/payment/status/${aliceLocal.paymentId}`)).json();
      return status.status === 'confirmed' || status.status === 'finalized' ? status : undefined;
    }, "Alice's local-mode payment confirmed");

    // Bob's own payment, made after all of Alice's: what his stream and webhook do show.
    const bobs = await f.post(bob.key, '/payment/send', {
      walletAddress: bob.wallet,
      recipientAddress: carol.wallet,
      amount: 0.01,
    });
    assert.equal(bobs.statusCode, 200, bobs.body);
    bobSent = bobs.json();
    await bobStream.until(
      (c) => c.events().some((e) => e.type === 'payment.confirmed'),
      15_000,
      "Bob's own confirmed payment",
    );
    await receivers.bob.until(2);
    // Alice's: sent and confirmed, received, and her local-mode payment confirmed.
    await receivers.alice.until(4);
  });
  after(async () => {
    bobStream?.close();
    await receivers.alice.close();
    await receivers.bob.close();
    await f.close();
  });

  it('answers each of another account’s payments exactly like a payment that does not exist', async () => {
    const missing = await f.get(bob.key, `/payment/status/${MISSING_PAYMENT}`);
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.code, 'PAYMENT_NOT_FOUND');
    for (const id of [aliceSent.paymentId, aliceReceived.paymentId, aliceLocal.paymentId]) {
      assert.equal((await f.get(alice.key, `/payment/status/${id}`)).statusCode, 200, 'Alice sees it');
      const res = await f.get(bob.key, `/payment/status/${id}`);
      assert.deepEqual(refusal(res, id), refusal(missing, MISSING_PAYMENT), id);
    }
  });

  it('refuses another account’s wallets on every route that takes one, with the answer a wallet of nobody’s gets', async () => {
    const nobody = generateSolanaKeypair().address;
    const probes = (wallet: string): (() => Promise<LightMyRequestResponse>)[] => [
      () => f.get(bob.key, `/payment/history/${wallet}`),
      () => f.get(bob.key, `/payment/history/${wallet}?type=sent&limit=1`),
      () => f.get(bob.key, `/payment/history/${wallet}?type=received&offset=1`),
      () =>
        f.post(bob.key, '/payment/send', {
          walletAddress: wallet,
          recipientAddress: bob.wallet,
          amount: 0.01,
        }),
      () =>
        f.post(bob.key, '/payment/receive', {
          walletAddress: wallet,
          paymentProof: aliceSent.paymentProof,
          expectedAmount: 0.1,
        }),
      () =>
        f.post(bob.key, '/transaction/receive', {
          walletAddress: wallet,
          paymentProof: aliceSent.paymentProof,
          expectedAmount: 0.1,
        }),
    ];
    const balances = async () => [
      await f.chain.adapter.getBalance(alice.wallet),
      await f.chain.adapter.getBalance(carol.wallet),
    ];
    const balancesBefore = await balances();
    const unknown = await Promise.all(probes(nobody).map((probe) => probe()));
    for (const res of unknown) {
      assert.equal(res.statusCode, 403, res.body);
      assert.equal(res.json().error.code, 'FORBIDDEN');
    }
    for (const wallet of [alice.wallet, carol.wallet]) {
      const answers = await Promise.all(probes(wallet).map((probe) => probe()));
      answers.forEach((res, i) => {
        const expected = unknown[i];
        assert.ok(expected !== undefined);
        assert.deepEqual(refusal(res, wallet), refusal(expected, nobody), `${wallet} probe ${i}`);
      });
    }
    assert.deepEqual(await balances(), balancesBefore, 'nothing moved');
    // Bob's attempts to claim the proof into Carol's wallet consumed nothing: Carol redeems it.
    const redeemed = await f.post(carol.key, '/payment/receive', {
      walletAddress: carol.wallet,
      paymentProof: aliceSent.paymentProof,
      expectedAmount: 0.1,
    });
    assert.equal(redeemed.statusCode, 200, redeemed.body);
  });

  it('shows an account its own local-mode builds from another account’s wallet address, and nothing of the owner’s', async () => {
    // Local mode takes any payer address (the caller signs), so Bob can build from Alice's wallet; he
    // cannot sign it, and the history he then gets of that address holds his build alone.
    const aliceTotal = async () => (await f.get(alice.key, `/payment/history/${alice.wallet}`)).json().total;
    const before = await aliceTotal();
    const built = await f.post(bob.key, '/transaction/send', {
      walletAddress: alice.wallet,
      recipientAddress: bob.wallet,
      amount: 0.01,
    });
    assert.equal(built.statusCode, 200, built.body);
    const history = await f.get(bob.key, `/payment/history/${alice.wallet}`);
    assert.equal(history.statusCode, 200, history.body);
    assert.equal(history.json().total, 1);
    assert.deepEqual(
      history.json().payments.map((p: { paymentId: string }) => p.paymentId),
      [built.json().paymentId],
    );
    const received = await f.get(bob.key, `/payment/history/${alice.wallet}?type=received`);
    assert.equal(received.statusCode, 403, 'none of his own received there: the wallet is still not his');
    assert.equal(await aliceTotal(), before, "Alice's history is as it was");
    const hers = await f.get(alice.key, `/payment/status/${built.json().paymentId}`);
    assert.equal(hers.json().error.code, 'PAYMENT_NOT_FOUND', 'and his build is not hers');
  });

  it('shows nothing of another account’s payments through an address registered to watch, and leaves the owner’s view as it was', async () => {
    const wallets = (await f.get(bob.key, '/wallets')).json().wallets as {
      address: string;
      watchOnly: boolean;
    }[];
    assert.ok(
      wallets.some((w) => w.address === payer.address && w.watchOnly),
      'Bob watches the address',
    );
    for (const query of ['', '?type=sent', '?type=received']) {
      const history = await f.get(bob.key, `/payment/history/${payer.address}${query}`);
      assert.equal(history.statusCode, 200, history.body);
      assert.deepEqual(history.json(), {
        walletAddress: payer.address,
        total: 0,
        limit: 50,
        offset: 0,
        payments: [],
      });
    }
    // Alice paid from the address after Bob had registered it: her payment is hers, and she still sees it.
    const hers = (await f.get(alice.key, `/payment/history/${payer.address}`)).json();
    assert.equal(hers.total, 1);
    assert.equal(hers.payments[0].paymentId, aliceLocal.paymentId);
    assert.equal(hers.payments[0].type, 'sent');
  });

  it('delivers the stream and webhooks of a payment to its own account only, and resumes only from one’s own events', async () => {
    const paymentIdOf = (message: unknown) => (message as { data: { paymentId: string } }).data.paymentId;
    assert.deepEqual([...new Set(bobStream.events().map(paymentIdOf))], [bobSent.paymentId]);
    assert.deepEqual(
      [...new Set(receivers.bob.received.map((r) => paymentIdOf(r.verified)))],
      [bobSent.paymentId],
      "Bob's endpoint got only his own payment's events, each signed with his secret",
    );
    const aliceGot = new Set(receivers.alice.received.map((r) => paymentIdOf(r.verified)));
    for (const id of [aliceSent.paymentId, aliceReceived.paymentId, aliceLocal.paymentId]) {
      assert.ok(aliceGot.has(id), `Alice's endpoint got ${id}`);
    }
    assert.ok(!aliceGot.has(bobSent.paymentId));

    // Resuming from one of Alice's events is refused exactly as from an event that never existed.
    const [aliceEvent] = await f.gw.store.events.listAfter(alice.accountId, 0, 1);
    assert.ok(aliceEvent !== undefined);
    const refusedUpgrade = async (since: string) => {
      try {
        (await openStream(`${url}?since=${since}`, { headers: bearer(bob.key) })).close();
      } catch (error) {
        return error as { status: number; body: string };
      }
      assert.fail(`a stream resuming from ${since} was opened`);
    };
    const missingUpgrade = await refusedUpgrade(MISSING_EVENT);
    assert.equal(missingUpgrade.status, 400);
    const upgrade = await refusedUpgrade(aliceEvent.id);
    assert.deepEqual(
      refusal({ statusCode: upgrade.status, body: upgrade.body }),
      refusal({ statusCode: missingUpgrade.status, body: missingUpgrade.body }),
    );
    const errors = () => bobStream.messages.filter((m) => m.type === 'error');
    bobStream.send({ type: 'subscribe', since: aliceEvent.id });
    bobStream.send({ type: 'subscribe', since: MISSING_EVENT });
    await bobStream.until((c) => c.messages.filter((m) => m.type === 'error').length === 2);
    const [theirs, none] = errors();
    assert.deepEqual(theirs, none);
    assert.deepEqual((theirs?.error as { details?: unknown } | undefined)?.details, {
      since: 'must be the id of one of your events (evt_…)',
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(
      [...new Set(bobStream.events().map(paymentIdOf))],
      [bobSent.paymentId],
      'nothing replayed',
    );
  });

  it('leaves another account’s webhooks and their deliveries as they were', async () => {
    const deliveries = async () =>
      (await f.get(alice.key, `/webhooks/${hooks.alice.id}/deliveries`)).json().deliveries as {
        id: string;
        status: string;
        attempts: number;
      }[];
    const logBefore = await deliveries();
    const delivery = logBefore.find((d) => d.status === 'succeeded');
    assert.ok(delivery !== undefined, 'Alice has a delivered event');
    const requestsBefore = receivers.alice.received.length;
    const call = (method: 'GET' | 'POST' | 'DELETE', path: string) =>
      f.gw.app.inject({ method, url: path, headers: bearer(bob.key) } satisfies InjectOptions);
    const redeliver = (webhook: string, id: string) =>
      call('POST', `/webhooks/${webhook}/deliveries/${id}/redeliver`);

    const probes: [LightMyRequestResponse, LightMyRequestResponse, string[], string[]][] = [
      [
        await redeliver(hooks.alice.id, delivery.id),
        await redeliver(MISSING_WEBHOOK, MISSING_DELIVERY),
        [hooks.alice.id, delivery.id],
        [MISSING_WEBHOOK, MISSING_DELIVERY],
      ],
      [
        await redeliver(hooks.bob.id, delivery.id),
        await redeliver(hooks.bob.id, MISSING_DELIVERY),
        [delivery.id],
        [MISSING_DELIVERY],
      ],
      [
        await call('GET', `/webhooks/${hooks.alice.id}/deliveries`),
        await call('GET', `/webhooks/${MISSING_WEBHOOK}/deliveries`),
        [hooks.alice.id],
        [MISSING_WEBHOOK],
      ],
      [
        await call('DELETE', `/webhooks/${hooks.alice.id}`),
        await call('DELETE', `/webhooks/${MISSING_WEBHOOK}`),
        [hooks.alice.id],
        [MISSING_WEBHOOK],
      ],
    ];
    for (const [theirs, missing, asked, missingAsked] of probes) {
      assert.equal(missing.statusCode, 404, missing.body);
      assert.equal(missing.json().error.code, 'NOT_FOUND');
      assert.deepEqual(refusal(theirs, ...asked), refusal(missing, ...missingAsked), theirs.body);
    }
    const listed = (await f.get(bob.key, '/webhooks')).json().webhooks as { id: string }[];
    assert.deepEqual(
      listed.map((w) => w.id),
      [hooks.bob.id],
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(receivers.alice.received.length, requestsBefore, 'nothing was sent to Alice again');
    assert.deepEqual(await deliveries(), logBefore, "Alice's delivery log is unchanged");
    const hers = (await f.get(alice.key, '/webhooks')).json().webhooks as { id: string }[];
    assert.deepEqual(
      hers.map((w) => w.id),
      [hooks.alice.id],
    );
  });

  it('keeps Idempotency-Keys per account: another account’s same key and request never gets the stored answer', async () => {
    // Alice's very requests, under her keys: for Bob they are new requests, refused or answered afresh.
    const send = await f.post(bob.key, '/payment/send', aliceSendBody, { 'idempotency-key': 'order-1' });
    assert.equal(send.statusCode, 403, send.body);
    assert.equal(send.json().error.code, 'FORBIDDEN');
    assert.equal(replayed(send), undefined);
    const receive = await f.post(bob.key, '/payment/receive', aliceReceiveBody, {
      'idempotency-key': 'receipt-1',
    });
    assert.equal(receive.statusCode, 403, receive.body);
    assert.equal(replayed(receive), undefined);
    const local = await f.post(bob.key, '/transaction/send', aliceLocalBody, {
      'idempotency-key': 'local-1',
    });
    assert.equal(local.statusCode, 200, local.body);
    assert.equal(replayed(local), undefined);
    assert.notEqual(local.json().paymentId, aliceLocal.paymentId);
    assert.notEqual(local.json().transaction, aliceLocal.transaction);
    for (const res of [send, receive, local]) {
      for (const id of [aliceSent.paymentId, aliceReceived.paymentId, aliceLocal.paymentId]) {
        assert.ok(!res.body.includes(id), `${res.body} names ${id}`);
      }
    }
    // Bob's own request under a key Alice used is his own: paid once, replayed to him alone.
    const own = { walletAddress: bob.wallet, recipientAddress: carol.wallet, amount: 0.002 };
    const first = await f.post(bob.key, '/payment/send', own, { 'idempotency-key': 'alice-and-bob' });
    const hersUnderTheSameKey = await f.post(
      alice.key,
      '/payment/send',
      { ...aliceSendBody, amount: 0.002 },
      { 'idempotency-key': 'alice-and-bob' },
    );
    const again = await f.post(bob.key, '/payment/send', own, { 'idempotency-key': 'alice-and-bob' });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(hersUnderTheSameKey.statusCode, 200, hersUnderTheSameKey.body);
    assert.equal(replayed(hersUnderTheSameKey), undefined);
    assert.notEqual(hersUnderTheSameKey.json().paymentId, first.json().paymentId);
    assert.equal(replayed(again), 'true');
    assert.equal(again.json().paymentId, first.json().paymentId);
    // Alice's stored answers are still hers.
    const aliceAgain = await f.post(alice.key, '/payment/send', aliceSendBody, {
      'idempotency-key': 'order-1',
    });
    assert.equal(replayed(aliceAgain), 'true');
    assert.equal(aliceAgain.json().paymentId, aliceSent.paymentId);
  });
});

/**
 * x402 payloads settling through the built-in facilitator for Alice's wallet, on a localnet whose slots
 * advance only by hand, so a settlement stays open (claimed, sent, not yet recorded) as long as the test
 * wants. Bob, holding such a payload, presents it for his own wallet: the header's `accepted` is the
 * buyer's to write, and the facilitator's requirements are the seller's, so neither says whom the signed
 * transfer pays. Bob must get the answer any payload paying someone else gets.
 */
describe('account isolation in x402 settlement: a payload settling for another account', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let pumping: NodeJS.Timeout | undefined;
  /** Slots advance while setting up (faucet transfers wait for confirmation), not while settling. */
  const pump = (on: boolean) => {
    if (pumping !== undefined) clearInterval(pumping);
    pumping = on ? setInterval(() => chain.localnet.advanceSlots(1), 10) : undefined;
  };

  before(async () => {
    chain = await startTestChain({ slotMs: 0, finalizedDepth: 2 });
    pump(true);
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]), confirmTimeoutMs: 1_000 });
    await gw.services.facilitator.start();
  });
  after(async () => {
    pump(false);
    await gw?.close();
    await chain?.close();
  });

  it('answers Bob as for a payload paying someone else, and records Alice’s payments for Alice alone', async () => {
    const post = (key: string, url: string, payload: object) =>
      gw.app.inject({ method: 'POST', url, headers: bearer(key), payload });
    const get = (key: string, url: string) => gw.app.inject({ method: 'GET', url, headers: bearer(key) });
    const alice = await gw.newCaller('premium');
    const bob = await gw.newCaller('premium');
    const walletOf = async (key: string) =>
      (await post(key, '/wallets', { chain: 'solana' })).json().address as string;
    const [aliceWallet, bobWallet] = [await walletOf(alice.key), await walletOf(bob.key)];
    const buyer = await generateKeyPairSigner();
    // Token accounts for both sellers (x402 `exact` pays an existing one), and the buyer's USDC.
    for (const [address, amount] of [
      [aliceWallet, 0.01],
      [bobWallet, 0.01],
      [buyer.address, 1],
    ] as const) {
      const funded = await post(alice.key, '/faucet', { address, amount, token: 'USDC' });
      assert.equal(funded.statusCode, 200, funded.body);
    }
    const feePayer = (await get(alice.key, '/facilitator/supported'))
      .json()
      .kinds.find((k: { network: string }) => k.network === SOLANA_DEVNET_ID).extra.feePayer as string;
    // Three payments to Alice (distinct amounts, so distinct transfers): two she settles, one nobody does.
    const paying = async (amount: string) => {
      const requirements = svmExactRequirements(chain, { amount, payTo: aliceWallet, feePayer });
      return { requirements, payload: await svmPayload(chain, buyer, requirements) };
    };
    const [forReceive, forSettle, unsettled] = [
      await paying('250000'),
      await paying('260000'),
      await paying('270000'),
    ];
    pump(false);
    for (const p of [forReceive, forSettle]) {
      const pending = await post(alice.key, '/facilitator/settle', {
        x402Version: 2,
        paymentPayload: p.payload,
        paymentRequirements: p.requirements,
      });
      assert.equal(pending.json().errorReason, 'settlement_pending', pending.body);
    }
    // Both transfers land; neither settlement has recorded its payment yet.
    chain.localnet.advanceSlots(3);

    const asBobs = (p: typeof forReceive) => ({
      ...p.payload,
      accepted: { ...p.payload.accepted, payTo: bobWallet },
    });
    const receive = (p: typeof forReceive) =>
      post(bob.key, '/payment/receive', {
        walletAddress: bobWallet,
        paymentProof: Buffer.from(JSON.stringify(asBobs(p))).toString('base64'),
        expectedAmount: Number(p.requirements.amount) / 1e6,
        asset: 'USDC',
      });
    const [theirs, nobodys] = [await receive(forReceive), await receive(unsettled)];
    assert.equal(nobodys.statusCode, 422, nobodys.body);
    assert.equal(nobodys.json().error.details.paymentProof, 'invalid_exact_svm_payload_recipient_mismatch');
    assert.equal(theirs.statusCode, 422, theirs.body);
    assert.deepEqual(refusal(theirs), refusal(nobodys), theirs.body);

    const settle = (p: typeof forReceive) =>
      post(bob.key, '/facilitator/settle', {
        x402Version: 2,
        paymentPayload: p.payload,
        paymentRequirements: { ...p.requirements, payTo: bobWallet },
      });
    const [settledForBob, nobodysSettle] = [await settle(forSettle), await settle(unsettled)];
    assert.equal(nobodysSettle.json().errorReason, 'invalid_exact_svm_payload_recipient_mismatch');
    assert.deepEqual(settledForBob.json(), nobodysSettle.json());

    // Alice settling again gets her payments, recorded once each, for her alone.
    for (const p of [forReceive, forSettle]) {
      const settled = await post(alice.key, '/facilitator/settle', {
        x402Version: 2,
        paymentPayload: p.payload,
        paymentRequirements: p.requirements,
      });
      assert.equal(settled.json().success, true, settled.body);
    }
    // Verifying a settled payload: a duplicate for its own terms, for Bob's what any payload paying
    // someone else gets (nothing of the settlement: neither its transaction nor that it exists).
    const verify = (key: string, p: typeof forReceive, payTo: string) =>
      post(key, '/facilitator/verify', {
        x402Version: 2,
        paymentPayload: p.payload,
        paymentRequirements: { ...p.requirements, payTo },
      });
    assert.equal(
      (await verify(alice.key, forSettle, aliceWallet)).json().invalidReason,
      'duplicate_settlement',
    );
    const [verifiedForBob, nobodysVerify] = [
      await verify(bob.key, forSettle, bobWallet),
      await verify(bob.key, unsettled, bobWallet),
    ];
    assert.equal(nobodysVerify.json().invalidReason, 'invalid_exact_svm_payload_recipient_mismatch');
    assert.deepEqual(verifiedForBob.json(), nobodysVerify.json());
    const checkProof = (p: typeof forReceive) =>
      post(bob.key, '/v1/payments/verify', {
        payment_proof: Buffer.from(JSON.stringify(asBobs(p))).toString('base64'),
        amount: Number(p.requirements.amount),
        recipient: bobWallet,
      });
    assert.deepEqual((await checkProof(forReceive)).json(), (await checkProof(unsettled)).json());

    const hers = (await get(alice.key, `/payment/history/${aliceWallet}`)).json();
    assert.deepEqual(hers.payments.map((p: { amount: number }) => p.amount).sort(), [0.25, 0.26]);
    assert.equal((await get(bob.key, `/payment/history/${bobWallet}`)).json().total, 0);
  });
});

/** A browser's dashboard session, as in dashboard-api.test.ts. */
interface Browser {
  cookie: string;
  csrf: string;
  accountId: string;
}

describe('account isolation in the dashboard, with real payments on a real chain', () => {
  let chain: TestChain;
  let gw: DashboardApp;
  let alice: Browser & { wallet: string; key: string };
  let bob: Browser & { wallet: string };
  let aliceSent: string;
  let aliceDelivery: { webhook: string; id: string };
  const receiver = new WebhookReceiver();

  const as = (browser: Browser, options: InjectOptions): InjectOptions => ({
    ...options,
    headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf },
  });
  const signUp = async (email: string): Promise<Browser> => {
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email, password: 'correct horse battery' },
    });
    assert.equal(res.statusCode, 200, res.body);
    // Webhooks and the live list are Premium features, in the dashboard as through the API; this suite
    // is about whose data each account sees, so both accounts may use every door.
    await gw.services.accounts.setPlan(res.json().accountId, { plan: 'premium' });
    const cookie = String(res.headers['set-cookie']).split(';')[0] ?? '';
    return { cookie, csrf: res.json().csrfToken, accountId: res.json().accountId };
  };
  const newWallet = async (browser: Browser): Promise<string> => {
    const res = await gw.app.inject(
      as(browser, { method: 'POST', url: '/dashboard/api/wallets', payload: { chain: 'solana' } }),
    );
    assert.equal(res.statusCode, 200, res.body);
    return res.json().address;
  };

  before(async () => {
    chain = await startTestChain();
    gw = await startDashboardApp({ networks: new NetworkRegistry([chain.adapter]) });
    const a = await signUp('alice@example.test');
    const aliceWallet = await newWallet(a);
    const funded = await gw.app.inject(
      as(a, { method: 'POST', url: `/dashboard/api/wallets/${aliceWallet}/faucet` }),
    );
    assert.equal(funded.statusCode, 200, funded.body);
    const key = await gw.app.inject(
      as(a, { method: 'POST', url: '/dashboard/api/keys', payload: { name: 'shop' } }),
    );
    assert.equal(key.statusCode, 200, key.body);
    alice = { ...a, wallet: aliceWallet, key: key.json().key };
    const b = await signUp('bob@example.test');
    bob = { ...b, wallet: await newWallet(b) };

    const hook = await gw.app.inject(
      as(alice, {
        method: 'POST',
        url: '/dashboard/api/webhooks',
        payload: { url: await receiver.start(), eventTypes: ['payment.sent'] },
      }),
    );
    assert.equal(hook.statusCode, 200, hook.body);
    const sent = await gw.app.inject({
      method: 'POST',
      url: '/payment/send',
      headers: bearer(alice.key),
      payload: {
        walletAddress: alice.wallet,
        recipientAddress: generateSolanaKeypair().address,
        amount: 0.1,
      },
    });
    assert.equal(sent.statusCode, 200, sent.body);
    aliceSent = sent.json().paymentId;
    await receiver.until(1);
    const deliveries = await eventually(async () => {
      const res = await gw.app.inject(
        as(alice, { method: 'GET', url: `/dashboard/api/webhooks/${hook.json().id}/deliveries` }),
      );
      const list = res.json().deliveries as { id: string; status: string }[];
      return list.some((d) => d.status === 'succeeded') ? list : undefined;
    }, "Alice's delivery");
    aliceDelivery = { webhook: hook.json().id, id: deliveries[0]?.id ?? '' };
  });
  after(async () => {
    await receiver.close();
    await gw?.close();
    await chain?.close();
  });

  it('answers another account’s payment, wallet, delivery and key as if they did not exist', async () => {
    const get = (url: string) => gw.app.inject(as(bob, { method: 'GET', url }));
    const post = (url: string) => gw.app.inject(as(bob, { method: 'POST', url }));
    const missing = await get(`/dashboard/api/payments/${MISSING_PAYMENT}`);
    assert.equal(missing.json().error.code, 'PAYMENT_NOT_FOUND');
    assert.equal(
      (await gw.app.inject(as(alice, { method: 'GET', url: `/dashboard/api/payments/${aliceSent}` })))
        .statusCode,
      200,
    );
    assert.deepEqual(
      refusal(await get(`/dashboard/api/payments/${aliceSent}`), aliceSent),
      refusal(missing, MISSING_PAYMENT),
    );
    for (const query of [`?wallet=${alice.wallet}`, `?wallet=${alice.wallet}&type=sent`, '']) {
      const page = await get(`/dashboard/api/payments${query}`);
      assert.deepEqual(page.json(), { total: 0, limit: 20, offset: 0, payments: [] }, query);
    }
    // The faucet button funds only the account's own wallets.
    const balance = await chain.adapter.getBalance(alice.wallet);
    const nobody = generateSolanaKeypair().address;
    const fundNobody = await post(`/dashboard/api/wallets/${nobody}/faucet`);
    assert.equal(fundNobody.statusCode, 403);
    assert.deepEqual(
      refusal(await post(`/dashboard/api/wallets/${alice.wallet}/faucet`), alice.wallet),
      refusal(fundNobody, nobody),
    );
    assert.equal(await chain.adapter.getBalance(alice.wallet), balance);
    const wallets = (await get('/dashboard/api/wallets')).json().wallets as { address: string }[];
    assert.deepEqual(
      wallets.map((w) => w.address),
      [bob.wallet],
    );
    // Alice's delivery and endpoint.
    const redeliver = await post(
      `/dashboard/api/webhooks/${aliceDelivery.webhook}/deliveries/${aliceDelivery.id}/redeliver`,
    );
    const redeliverMissing = await post(
      `/dashboard/api/webhooks/${MISSING_WEBHOOK}/deliveries/${MISSING_DELIVERY}/redeliver`,
    );
    assert.equal(redeliverMissing.statusCode, 404);
    assert.deepEqual(
      refusal(redeliver, aliceDelivery.webhook, aliceDelivery.id),
      refusal(redeliverMissing, MISSING_WEBHOOK, MISSING_DELIVERY),
    );
    assert.deepEqual((await get('/dashboard/api/webhooks')).json().webhooks, []);
    assert.deepEqual((await get('/dashboard/api/keys')).json().keys, []);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(receiver.received.length, 1, 'nothing was sent to Alice again');
  });
});

describe('account isolation on EVM: another spelling of an address is the same address', () => {
  let f: EvmPaymentFixture;
  let alice: EvmParty;
  let bob: EvmParty;
  let carol: EvmParty;
  let aliceSent: { paymentId: string; paymentProof: string };

  before(async () => {
    f = await startEvmPaymentFixture();
    alice = await f.party(10n * ETH);
    bob = await f.party(ETH);
    carol = await f.party();
    const sent = await f.post(alice.key, '/payment/send', {
      walletAddress: alice.wallet,
      recipientAddress: carol.wallet,
      amount: 0.01,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    aliceSent = sent.json();
  });
  after(() => f.close());

  it('refuses another account’s EVM wallets in lower and upper case as a wallet of nobody’s', async () => {
    const spellings = (address: string) => [address.toLowerCase(), `0x${address.slice(2).toUpperCase()}`];
    const nobody = `0x${randomBytes(20).toString('hex')}`;
    const probes = (wallet: string): (() => Promise<LightMyRequestResponse>)[] => [
      () => f.get(bob.key, `/payment/history/${wallet}`),
      () =>
        f.post(bob.key, '/payment/send', {
          walletAddress: wallet,
          recipientAddress: bob.wallet,
          amount: 0.001,
        }),
      () =>
        f.post(bob.key, '/payment/receive', {
          walletAddress: wallet,
          paymentProof: aliceSent.paymentProof,
          expectedAmount: 0.01,
        }),
      () =>
        f.post(bob.key, '/transaction/receive', {
          walletAddress: wallet,
          paymentProof: aliceSent.paymentProof,
          expectedAmount: 0.01,
        }),
    ];
    const balance = await f.chain.getBalance(alice.wallet);
    const unknown = await Promise.all(probes(nobody).map((probe) => probe()));
    for (const res of unknown) assert.equal(res.statusCode, 403, res.body);
    for (const wallet of [...spellings(alice.wallet), ...spellings(carol.wallet)]) {
      const answers = await Promise.all(probes(wallet).map((probe) => probe()));
      answers.forEach((res, i) => {
        const expected = unknown[i];
        assert.ok(expected !== undefined);
        assert.deepEqual(refusal(res, wallet), refusal(expected, nobody), `${wallet} probe ${i}`);
      });
      const watch = await f.post(bob.key, '/wallets/challenge', { chain: 'evm', address: wallet });
      assert.equal(watch.statusCode, 409, `${wallet}: ${watch.body}`);
      assert.equal(watch.json().error.code, 'WALLET_ALREADY_REGISTERED');
    }
    const status = await f.get(bob.key, `/payment/status/${aliceSent.paymentId}`);
    assert.equal(status.json().error.code, 'PAYMENT_NOT_FOUND');
    assert.equal(await f.chain.getBalance(alice.wallet), balance, 'nothing moved');
    const redeemed = await f.post(carol.key, '/payment/receive', {
      walletAddress: carol.wallet,
      paymentProof: aliceSent.paymentProof,
      expectedAmount: 0.01,
    });
    assert.equal(redeemed.statusCode, 200, redeemed.body);
  });
});

describe('account isolation in the gate402 command', () => {
  const dir = tempDir();
  after(() => dir.dispose());
  const run = (args: string[]) => gate402Json(dir.path, args, { ALLOW_PRIVATE_OUTBOUND_URLS: 'true' });

  it('deletes a webhook only when --account names its owner, answering any other like a missing one', () => {
    const alice = run(['accounts', 'create', '--name', 'alice', '--plan', 'premium']).json;
    const bob = run(['accounts', 'create', '--name', 'bob', '--plan', 'premium']).json;
    const hook = run(['webhooks', 'create', '--account', alice.id, '--url', 'http://127.0.0.1:9/alice']);
    assert.equal(hook.code, 0, hook.stderr);
    const theirs = run(['webhooks', 'delete', hook.json.id, '--account', bob.id]);
    const missing = run(['webhooks', 'delete', MISSING_WEBHOOK, '--account', bob.id]);
    assert.equal(theirs.code, 1);
    assert.deepEqual(
      JSON.parse(JSON.stringify(theirs.json).replaceAll(hook.json.id, '<asked>')),
      JSON.parse(JSON.stringify(missing.json).replaceAll(MISSING_WEBHOOK, '<asked>')),
    );
    assert.equal(theirs.json.error.code, 'NOT_FOUND');
    assert.deepEqual(run(['webhooks', 'list', '--account', bob.id]).json, []);
    assert.deepEqual(
      run(['webhooks', 'list', '--account', alice.id]).json.map((w: { id: string }) => w.id),
      [hook.json.id],
    );
  });
});
