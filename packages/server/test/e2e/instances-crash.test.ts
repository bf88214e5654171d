import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Localnet } from '@gate402/localnet';
import type { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';
import { generateSolanaKeypair } from '../../src/chains/solana/solana-keypair.ts';
import {
  type CrashableGateway,
  cliWallet,
  type SentPayment,
  sleep,
  waitFor,
} from '../support/crash-harness.ts';
import { SKIP_POSTGRES, SKIP_REDIS } from '../support/databases.ts';
import { type TwoInstances, twoInstances } from '../support/two-instances.ts';

const SENDS = 12;
const LAMPORTS = 1_000_000_000n;
const FINAL = ['confirmed', 'finalized', 'expired', 'failed'];

interface HistoryPage {
  total: number;
  payments: { paymentId: string; status: string; amount: number; signature: string | null }[];
}

/**
 * Issue 10: two gateway processes share PostgreSQL and Redis; one is SIGKILLed while sends are in
 * flight through it. The other takes over what the dead one left open once its leases lapse, and the
 * clients' retries (same Idempotency-Key, now through the survivor) find the payments already made.
 */
describe('two instances on PostgreSQL and Redis: one killed mid-payment, the other finishes', {
  skip: SKIP_POSTGRES || SKIP_REDIS,
}, () => {
  let instances: TwoInstances | undefined;
  let localnet: Localnet;
  let chain: SolanaAdapter;
  let a: CrashableGateway;
  let b: CrashableGateway;

  before(async () => {
    instances = await twoInstances();
    ({ localnet, chain, a, b } = instances);
  });
  after(async () => {
    await instances?.dispose();
  });

  it('pays every send once, whichever instance finishes it', { timeout: 180_000 }, async () => {
    const { key, wallet } = cliWallet(a, 'two instances', 'solana');
    const recipient = generateSolanaKeypair().address;
    localnet.airdrop(wallet, 100n * LAMPORTS);
    await waitFor(async () => (await chain.getBalance(wallet)) === 100n * LAMPORTS);
    await Promise.all([a.start(), b.start()]);

    const send = (gateway: CrashableGateway, i: number) =>
      fetch(`${gateway.url}/payment/send`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': `two-instances-${i}`,
        },
        body: JSON.stringify({ walletAddress: wallet, recipientAddress: recipient, amount: (i + 1) / 1000 }),
      });
    // Every send goes to A; A dies as soon as some of them are stored, with the rest in flight.
    const throughA = Array.from({ length: SENDS }, (_, i) =>
      send(a, i).then(
        (res) => res.status,
        () => 0,
      ),
    );
    // Polled often: a send is answered within a few slots, and A must die before all of them are.
    await waitFor(
      async () => (await b.get<HistoryPage>(key, `/payment/history/${wallet}`)).total > 0,
      10_000,
      5,
    );
    await a.kill();
    const firstAnswers = await Promise.all(throughA);
    assert.ok(
      firstAnswers.some((status) => status !== 200),
      'A died with sends still unanswered (otherwise this test proves nothing)',
    );

    // The clients retry through B with the same keys until each gets its answer.
    const answers: SentPayment[] = [];
    for (let i = 0; i < SENDS; i++) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const res = await send(b, i);
        if (res.status === 200) {
          answers.push((await res.json()) as SentPayment);
          break;
        }
        // 409: A's claim on the key has not lapsed yet; 503: chain busy. Anything else is a failure.
        assert.ok([409, 503].includes(res.status), `send ${i}: ${res.status} ${await res.text()}`);
        assert.ok(Date.now() < deadline, `send ${i} never got an answer from B`);
        await sleep(250);
      }
    }
    assert.equal(new Set(answers.map((p) => p.paymentId)).size, SENDS, 'one payment per idempotency key');

    // B's reconciler settles whatever A left open.
    let history: HistoryPage = { total: 0, payments: [] };
    await waitFor(async () => {
      history = await b.get<HistoryPage>(key, `/payment/history/${wallet}?limit=100`);
      return history.payments.every((p) => FINAL.includes(p.status));
    }, 90_000);
    assert.equal(history.total, SENDS, 'no send recorded twice');
    assert.deepEqual(
      new Set(history.payments.map((p) => p.paymentId)),
      new Set(answers.map((p) => p.paymentId)),
    );

    let paid = 0n;
    let fees = 0n;
    for (const p of history.payments) {
      assert.notEqual(p.status, 'failed', `payment ${p.paymentId} failed`);
      if (p.status !== 'confirmed' && p.status !== 'finalized') continue;
      const tx = await chain.getTransaction(p.signature ?? '');
      assert.ok(tx, `payment ${p.paymentId} is on chain`);
      paid += BigInt(Math.round(p.amount * 1000)) * 1_000_000n;
      fees += tx.fee;
    }
    assert.ok(paid > 0n, 'payments landed');
    assert.equal(await chain.getBalance(recipient), paid, 'each landed payment reached the recipient once');
    assert.equal(
      await chain.getBalance(wallet),
      100n * LAMPORTS - paid - fees,
      'nothing else left the wallet',
    );
  });
});
