import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { svmExactRequirements, svmPayload } from '../../support/x402-buyer.ts';

/**
 * Settlement that outlives its wait, on a localnet whose slots advance only by hand: nothing confirms
 * until the test says so. The settle answers `settlement_pending` with its transaction; a retry on
 * another instance (same storage) looks at that transaction instead of sending another, and settles
 * it once it confirms; a third settle is `duplicate_settlement`. The buyer pays exactly once.
 */
describe('x402 settlement: pending, then settled by a retry on another instance', () => {
  let chain: TestChain;
  let first: TestGateway;
  let second: TestGateway;
  let pumping: NodeJS.Timeout | undefined;
  // Several instances share PostgreSQL in production; two stores on one SQLite file in one process can
  // stall each other on the file's write lock (see the session note), so PostgreSQL when it is there.
  let storage: TempStorage;
  const masterKey = new Uint8Array(randomBytes(32));

  /** Slots advance while setting up (faucet transfers wait for confirmation), not while settling. */
  const pump = (on: boolean) => {
    if (pumping !== undefined) clearInterval(pumping);
    pumping = on ? setInterval(() => chain.localnet.advanceSlots(1), 10) : undefined;
  };

  before(async () => {
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    chain = await startTestChain({ slotMs: 0, finalizedDepth: 2 });
    pump(true);
    const networks = new NetworkRegistry([chain.adapter]);
    const shared = { storage, masterKey, networks, confirmTimeoutMs: 1_500 };
    first = await startTestGateway({ ...shared, disposeStorage: false });
    second = await startTestGateway(shared);
    await first.services.facilitator.start();
    await second.services.facilitator.start();
  });

  after(async () => {
    pump(false);
    await first?.close();
    await second?.close();
    await chain?.close();
  });

  /** A v2 settle request: `amount` atomic USDC from `buyer` to `payTo`, signed by the stock @x402/svm client. */
  const settleBody = async (
    buyer: Awaited<ReturnType<typeof generateKeyPairSigner>>,
    payTo: string,
    feePayer: string,
    amount: string,
  ) => {
    const requirements = svmExactRequirements(chain, { amount, payTo, feePayer });
    const paymentPayload = await svmPayload(chain, buyer, requirements);
    return { x402Version: 2, paymentPayload, paymentRequirements: requirements };
  };

  it('answers settlement_pending with the transaction, and a retry settles that same transaction once', async () => {
    const seller = await first.newCaller('premium');
    const call = async (gw: TestGateway, method: 'GET' | 'POST', url: string, payload?: object) =>
      (await callAs(gw, seller.key, method, url, payload)).body;
    const wallet = (await call(first, 'POST', '/wallets', { chain: 'solana' })).address as string;
    const buyer = await generateKeyPairSigner();
    await call(first, 'POST', '/faucet', { address: wallet, amount: 0.01, token: 'USDC' });
    await call(first, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const supported = await call(first, 'GET', '/facilitator/supported');
    const feePayer = supported.kinds.find((k: { network: string }) => k.network === SOLANA_DEVNET_ID).extra
      .feePayer;
    assert.equal(
      (await call(second, 'GET', '/facilitator/supported')).kinds[0].extra.feePayer,
      feePayer,
      'instances sharing storage share the fee payer',
    );
    const body = await settleBody(buyer, wallet, feePayer, '250000');
    const usdcOf = async (owner: string) =>
      (await chain.adapter.getTokenAccounts(owner)).find((a) => a.mint === chain.localnet.usdcMint.address)
        ?.amount;
    const before = await usdcOf(buyer.address);

    pump(false);
    const pending = await call(first, 'POST', '/facilitator/settle', body);
    assert.equal(pending.success, false);
    assert.equal(pending.errorReason, 'settlement_pending');
    assert.match(pending.transaction, /^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    const stillPending = await call(second, 'POST', '/facilitator/settle', body);
    assert.deepEqual(
      [stillPending.errorReason, stillPending.transaction],
      ['settlement_pending', pending.transaction],
    );
    // Verify says so too, rather than that it was settled already (it is not, yet).
    const verified = await call(second, 'POST', '/facilitator/verify', body);
    assert.deepEqual([verified.isValid, verified.invalidReason], [false, 'settlement_pending']);
    assert.match(verified.invalidMessage, new RegExp(`under way \\(${pending.transaction}\\)`));

    chain.localnet.advanceSlots(3);
    const settled = await call(second, 'POST', '/facilitator/settle', body);
    assert.deepEqual(
      [settled.success, settled.transaction, settled.payer],
      [true, pending.transaction, buyer.address],
    );
    const duplicate = await call(first, 'POST', '/facilitator/settle', body);
    assert.deepEqual([duplicate.success, duplicate.errorReason], [false, 'duplicate_settlement']);
    const verifiedAfter = await call(first, 'POST', '/facilitator/verify', body);
    assert.deepEqual([verifiedAfter.isValid, verifiedAfter.invalidReason], [false, 'duplicate_settlement']);

    pump(true);
    assert.equal(before === undefined ? undefined : before - ((await usdcOf(buyer.address)) ?? 0n), 250_000n);
    const history = await call(first, 'GET', `/payment/history/${wallet}`);
    assert.equal(history.total, 1);
    assert.equal(history.payments[0].signature, pending.transaction);
    assert.equal(history.payments[0].amount, 0.25);
  });

  it('settles a payload sent to two instances at the same instant once: one success, the same transaction for all', async () => {
    pump(true);
    const seller = await first.newCaller('premium');
    const call = async (gw: TestGateway, method: 'GET' | 'POST', url: string, payload?: object) =>
      (await callAs(gw, seller.key, method, url, payload)).body;
    const wallet = (await call(first, 'POST', '/wallets', { chain: 'solana' })).address as string;
    const buyer = await generateKeyPairSigner();
    await call(first, 'POST', '/faucet', { address: wallet, amount: 0.01, token: 'USDC' });
    await call(first, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const supported = await call(first, 'GET', '/facilitator/supported');
    const feePayer = supported.kinds.find((k: { network: string }) => k.network === SOLANA_DEVNET_ID).extra
      .feePayer;
    const body = await settleBody(buyer, wallet, feePayer, '100000');
    const answers = await Promise.all(
      [first, second, first, second].map((gw) => call(gw, 'POST', '/facilitator/settle', body)),
    );
    // On a loaded machine every wait may end before the chain confirms (all settlement_pending): settling
    // again looks at the same transaction, until the one success comes.
    for (let i = 0; i < 20 && !answers.some((a) => a.success === true); i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      answers.push(await call(first, 'POST', '/facilitator/settle', body));
    }
    assert.equal(answers.filter((a) => a.success === true).length, 1, JSON.stringify(answers));
    for (const a of answers.filter((x) => x.success !== true)) {
      assert.ok(['duplicate_settlement', 'settlement_pending'].includes(a.errorReason), JSON.stringify(a));
    }
    assert.equal(new Set(answers.map((a) => a.transaction)).size, 1);
    const history = await call(first, 'GET', `/payment/history/${wallet}`);
    assert.equal(history.total, 1);
    const held = (await chain.adapter.getTokenAccounts(buyer.address)).find(
      (a) => a.mint === chain.localnet.usdcMint.address,
    )?.amount;
    assert.equal(held, 1_000_000n - 100_000n);
  });
});
