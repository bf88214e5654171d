import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { address, createSolanaRpc, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { UptoSvmScheme as UptoBuyer } from '@x402/svm/upto/client';
import { UptoSvmScheme as UptoSeller } from '@x402/svm/upto/server';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { channelRentHeld, openChannels } from '../../../src/services/facilitator/upto-open-channels.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { stockPayload } from '../../support/x402-buyer.ts';

const MAX = 50_000n;
const BUYER_USDC = 1_000_000n;
/** X402_UPTO_MAX_OPEN_CHANNELS here: one unclaimed deposit per account. */
const CAP = 1;

/**
 * Review (session 18) of 5e40341 (protect({ upto }) on Solana): the paywall settles the buyer's deposit
 * before the handler ("the handler serves only a buyer whose maximum is held"), then settles the claim
 * with the SAME payload stamped `type: 'claim'` — the buyer's own `expiresAt`. That field is signed by
 * nobody (the channel open binds no expiry; 2ccb69e) and the facilitator only checks it is in the
 * future at the deposit. A buyer writing `expiresAt` a few seconds ahead gets its deposit accepted and
 * the handler run, but every claim is refused as expired: the seller is paid nothing, the buyer gets its
 * whole deposit back from the sweep (~66 min), and the channel holds one of the seller account's
 * X402_UPTO_MAX_OPEN_CHANNELS places until then — 100 such requests (fees and rent paid by the fee
 * payer, the buyer's USDC back within the hour) refuse every honest buyer of the seller's upto offers.
 * What the paywall does is reproduced here at POST /facilitator/settle (deposit, then claim).
 *
 * Fixed: a deposit whose expiresAt leaves less than maxTimeoutSeconds (less an allowance for the
 * payload's way here, at most half of it) is refused before anything is signed or sent, so the claim the
 * paywall makes within maxTimeoutSeconds of the deposit is within what the deposit allows; and a claim
 * gives its deposit's place among X402_UPTO_MAX_OPEN_CHANNELS back at once (the rent a claimed channel
 * still holds until the sweep reclaims it counts against X402_UPTO_MAX_CHANNEL_RENT instead).
 */
describe('review-session18: a Solana upto deposit whose expiresAt leaves no time to claim', () => {
  let chain: TestChain;
  let storage: TempStorage;
  let gw: TestGateway;
  let seller: { key: string; accountId: string; solana: string };
  const usdc = () => chain.localnet.usdcMint.address;
  const usdcOf = async (owner: string): Promise<bigint> => {
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
  const newBuyer = async (): Promise<KeyPairSigner> => {
    const buyer = await generateKeyPairSigner();
    chain.localnet.airdrop(buyer.address, 1_000_000_000n);
    await chain.localnet.mintUsdc(buyer.address, BUYER_USDC);
    return buyer;
  };
  /** The offer as the paywall makes it (uptoExtra: withdrawDelay max(900, maxTimeoutSeconds), escrow flow). */
  const requirementsFor = async (payTo: string): Promise<PaymentRequirements> => {
    const kind = gw.services.facilitator
      .supported()
      .kinds.find((k) => k.scheme === 'upto' && k.network === SOLANA_DEVNET_ID);
    assert.ok(kind !== undefined);
    return new UptoSeller().enhancePaymentRequirements(
      {
        scheme: 'upto',
        network: SOLANA_DEVNET_ID,
        asset: usdc(),
        amount: MAX.toString(),
        payTo,
        maxTimeoutSeconds: 60,
        extra: {},
      },
      { x402Version: 2, scheme: 'upto', network: SOLANA_DEVNET_ID, extra: kind.extra ?? {} },
      [],
    );
  };
  const phase = (p: PaymentPayload, type: 'deposit' | 'claim'): PaymentPayload => ({
    ...p,
    payload: { ...p.payload, type },
  });
  const settle = async (p: PaymentPayload, requirements: PaymentRequirements) => {
    const { status, body } = await callAs(gw, seller.key, 'POST', '/facilitator/settle', {
      x402Version: 2,
      paymentPayload: p,
      paymentRequirements: requirements,
    });
    return { status, ...(body as { success: boolean; errorReason?: string; errorMessage?: string }) };
  };

  before(async () => {
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    chain = await startTestChain();
    gw = await startTestGateway({
      storage,
      masterKey: new Uint8Array(randomBytes(32)),
      networks: new NetworkRegistry([chain.adapter]),
      confirmTimeoutMs: 3_000,
      feeBudget: { budgets: { solana: '1' }, maxOpenUptoChannels: CAP },
    });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      solana: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
    };
    await chain.localnet.mintUsdc(seller.solana, 1n);
  });

  after(async () => {
    // The test gateway disposes of the storage it was given.
    await gw?.close();
    await chain?.close();
  });

  it('a deposit expiring seconds later is refused before anything moves; the stock buyer after it is held and its claim paid', async () => {
    const hostile = await newBuyer();
    const requirements = await requirementsFor(seller.solana);
    const stock = await stockPayload(new UptoBuyer(hostile, { rpcUrl: chain.localnet.rpcUrl }), requirements);
    const expiresAt = Math.floor(Date.now() / 1000) + 20;
    const payload: PaymentPayload = { ...stock, payload: { ...stock.payload, expiresAt } };

    // The paywall: verify, then the deposit before the handler.
    const verified = await callAs(gw, seller.key, 'POST', '/facilitator/verify', {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    const deposit = await settle(phase(payload, 'deposit'), requirements);
    assert.notEqual(
      deposit.errorReason,
      'invalid_upto_svm_payload_expired',
      'the machine was too slow for the 20 s window; the test proves nothing',
    );
    // The paywall's verify refuses it, so the handler never runs; a seller settling it anyway is refused too.
    assert.deepEqual(
      [verified.body.isValid, verified.body.invalidReason],
      [false, 'invalid_upto_svm_payload_expires_at_mismatch'],
      JSON.stringify(verified.body),
    );
    assert.deepEqual(
      [deposit.success, deposit.errorReason],
      [false, 'invalid_upto_svm_payload_expires_at_mismatch'],
      JSON.stringify(deposit),
    );
    assert.match(deposit.errorMessage ?? '', /maxTimeoutSeconds asks for 60/);
    assert.equal(await usdcOf(hostile.address), BUYER_USDC, 'nothing went into escrow');
    const open = () => openChannels(gw.store.sponsoredFees, seller.accountId, chain.adapter.info.id);
    assert.equal(await open(), 0n, 'no place taken');

    // An honest stock buyer of the same seller, right after: held, served, and its claim paid.
    const honest = await newBuyer();
    const honestPayload = await stockPayload(
      new UptoBuyer(honest, { rpcUrl: chain.localnet.rpcUrl }),
      await requirementsFor(seller.solana),
    );
    const honestDeposit = await settle(phase(honestPayload, 'deposit'), requirements);
    assert.equal(honestDeposit.success, true, JSON.stringify(honestDeposit));
    assert.equal(await open(), 1n);
    const claim = await settle(phase(honestPayload, 'claim'), { ...requirements, amount: '17500' });
    assert.equal(claim.success, true, JSON.stringify(claim));
    assert.equal(await usdcOf(honest.address), BUYER_USDC - 17_500n);
    assert.equal(await usdcOf(seller.solana), 1n + 17_500n, 'the seller is paid');
    assert.equal(await open(), 0n, 'the claim gave the place back');
  });

  it('a stock payload that took a while to arrive is still held: up to half of maxTimeoutSeconds (at most 30 s) may have passed', async () => {
    const buyer = await newBuyer();
    const requirements = await requirementsFor(seller.solana);
    const stock = await stockPayload(new UptoBuyer(buyer, { rpcUrl: chain.localnet.rpcUrl }), requirements);
    // As the stock client would have written it 20 s ago (its clock behind ours, or the request slow to arrive).
    const expiresAt = Math.floor(Date.now() / 1000) + requirements.maxTimeoutSeconds - 20;
    const late = { ...stock, payload: { ...stock.payload, expiresAt } };
    const deposit = await settle(phase(late, 'deposit'), requirements);
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    const claim = await settle(phase(late, 'claim'), { ...requirements, amount: '0' });
    assert.equal(claim.success, true, JSON.stringify(claim));
    assert.equal(await usdcOf(buyer.address), BUYER_USDC, 'a claim of 0 gives the whole deposit back');
  });

  it('two honest requests in a row: the second is held once the first is claimed, before the sweep reclaims its channel', async () => {
    // A seller account of its own (the cap is per account), with its token account open.
    const caller = await gw.newCaller('premium');
    const other = {
      key: caller.key,
      accountId: caller.accountId,
      solana: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address as string,
    };
    await chain.localnet.mintUsdc(other.solana, 1n);
    const open = () => openChannels(gw.store.sponsoredFees, other.accountId, chain.adapter.info.id);
    const settle = async (p: PaymentPayload, requirements: PaymentRequirements) =>
      (
        await callAs(gw, other.key, 'POST', '/facilitator/settle', {
          x402Version: 2,
          paymentPayload: p,
          paymentRequirements: requirements,
        })
      ).body as { success: boolean; errorReason?: string };
    const first = await newBuyer();
    const requirements = await requirementsFor(other.solana);
    const firstPayload = await stockPayload(
      new UptoBuyer(first, { rpcUrl: chain.localnet.rpcUrl }),
      requirements,
    );
    const deposit = await settle(phase(firstPayload, 'deposit'), requirements);
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    const claim = await settle(phase(firstPayload, 'claim'), { ...requirements, amount: '17500' });
    assert.equal(claim.success, true, JSON.stringify(claim));
    assert.equal(await usdcOf(first.address), BUYER_USDC - 17_500n, 'the first request is paid and closed');

    const second = await newBuyer();
    const secondPayload = await stockPayload(
      new UptoBuyer(second, { rpcUrl: chain.localnet.rpcUrl }),
      await requirementsFor(other.solana),
    );
    const secondDeposit = await settle(phase(secondPayload, 'deposit'), requirements);
    assert.equal(
      secondDeposit.success,
      true,
      `the first channel is claimed and distributed; open channels counted ${await open()} of ${CAP}: ${JSON.stringify(secondDeposit)}`,
    );
    assert.equal(await open(), 1n);
    // The first channel's account still holds its rent (its reclaim is 1,500 slots after its open): counted.
    const rent = await gw.services.facilitator.uptoSchemeFor(chain.adapter.info.id)?.escrow?.rent();
    assert.ok(rent !== undefined);
    const { value: firstChannel } = await createSolanaRpc(chain.localnet.rpcUrl)
      .getAccountInfo(address(String(firstPayload.payload.channelId)), {
        encoding: 'base64',
        commitment: 'confirmed',
      })
      .send();
    assert.equal(
      await channelRentHeld(gw.store.sponsoredFees, other.accountId, chain.adapter.info.id),
      rent.account + rent.escrow + (firstChannel === null ? 0n : rent.account),
    );
  });
});
