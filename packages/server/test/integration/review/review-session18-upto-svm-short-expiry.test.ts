import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { address, createSolanaRpc, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { UptoSvmScheme as UptoBuyer } from '@x402/svm/upto/client';
import { UptoSvmScheme as UptoSeller } from '@x402/svm/upto/server';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { openChannels } from '../../../src/services/facilitator/upto-open-channels.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { stockPayload } from '../../support/x402-buyer.ts';

const MAX = 50_000n;
const BUYER_USDC = 1_000_000n;
/** X402_UPTO_MAX_OPEN_CHANNELS here (default 100: a hostile buyer needs 100 requests instead of 1). */
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

  it('a deposit expiring seconds later is held, the claim after the handler is refused, and the seller’s open-channel places are taken', {
    todo: '5e40341: the paywall claims with the buyer’s unsigned expiresAt; a buyer writing now+few s is served, never charged (claim refused expired, deposit swept back) and fills X402_UPTO_MAX_OPEN_CHANNELS; refuse deposits whose expiresAt is under now+maxTimeoutSeconds-skew, or have the claim carry the deposit’s own deadline',
  }, async () => {
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
    let claim: Awaited<ReturnType<typeof settle>> | undefined;
    if (deposit.success) {
      assert.equal(verified.body.isValid, true, JSON.stringify(verified.body));
      assert.equal(await usdcOf(hostile.address), BUYER_USDC - MAX, 'the maximum is in escrow');
      // The handler served the request; it settles what it cost once the buyer's expiresAt has passed.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, (expiresAt + 1) * 1000 - Date.now())));
      claim = await settle(phase(payload, 'claim'), { ...requirements, amount: '17500' });
    }

    // An honest buyer of the same seller, right after.
    const honest = await newBuyer();
    const honestPayload = await stockPayload(
      new UptoBuyer(honest, { rpcUrl: chain.localnet.rpcUrl }),
      await requirementsFor(seller.solana),
    );
    const honestDeposit = await settle(phase(honestPayload, 'deposit'), requirements);
    const open = await openChannels(gw.store.sponsoredFees, seller.accountId, chain.adapter.info.id);
    // Whenever the buyer's maximum was held for the handler, the handler's claim is paid.
    assert.equal(
      !deposit.success || claim?.success === true,
      true,
      `deposit ${JSON.stringify(deposit)}; claim ${JSON.stringify(claim)}; seller USDC ${await usdcOf(seller.solana)}; then an honest buyer's deposit ${JSON.stringify(honestDeposit)} (open channels ${open} of ${CAP})`,
    );
  });

  it('two honest requests in a row: the second is refused until the sweep reclaims the first channel, claimed or not', {
    todo: '5e40341: every protect({ upto }) request on Solana is a deposit taking one X402_UPTO_MAX_OPEN_CHANNELS place until the sweep reclaims its channel (>= 1,500 slots, ~10 min on mainnet), also after its claim: a seller serves at most 100 upto requests per ~10 min, and a buyer making 100 cheap requests (settle(0) costs it nothing) locks the offer; give the place back when the claim settles and bound the rent otherwise (a rent budget), or have the paywall fall back to exact',
  }, async () => {
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
  });
});
