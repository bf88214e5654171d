import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { address, createSolanaRpc, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { UptoSvmScheme as UptoBuyer } from '@x402/svm/upto/client';
import { UptoSvmScheme as UptoSeller } from '@x402/svm/upto/server';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { stockPayload } from '../../support/x402-buyer.ts';

const MAX = 50_000n;
const DAY_S = 86_400;

/**
 * Review (session 17b) of x402 `upto` on Solana in the built-in facilitator (def5e59): the claim is
 * verified against the `expiresAt` its OWN payload carries (UptoSvmScheme.verify: `now >= p.expiresAt`),
 * which the seller writes — the buyer signs only the open transaction, and neither readTerms nor
 * verifyClaim ties the claim's expiresAt to the deposit's (held at most 1 h ahead by verifyDeposit). With
 * the receiver authorizer delegated to gate402 (the stock seller's default), claimTransaction then signs
 * the voucher with the fee payer's key for that later expiry. So a seller claims the buyer's escrow at any
 * time until the sweep closes the channel — after the deadline the buyer was offered, and racing the
 * sweep, whose doc (UptoSvmScheme.sweep: "verify held expiresAt within that of the deposit, so no voucher
 * applies any more") assumes no claim can land past createdAt + 1 h + skew.
 */
describe('review-session17b: a Solana upto claim may name a later expiresAt than its deposit', () => {
  let chain: TestChain;
  let storage: TempStorage;
  let gw: TestGateway;
  let seller: { key: string; solana: string };
  const usdc = () => chain.localnet.usdcMint.address;

  const balance = async (owner: string): Promise<bigint> => {
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
    await chain.localnet.mintUsdc(buyer.address, 1_000_000n);
    return buyer;
  };
  const requirementsFor = async (payTo: string): Promise<PaymentRequirements> => {
    const kind = gw.services.facilitator
      .supported()
      .kinds.find((k) => k.scheme === 'upto' && k.network === SOLANA_DEVNET_ID);
    assert.ok(kind !== undefined, 'upto is listed under devnet’s id');
    return new UptoSeller().enhancePaymentRequirements(
      {
        scheme: 'upto',
        network: SOLANA_DEVNET_ID,
        asset: usdc(),
        amount: MAX.toString(),
        payTo,
        maxTimeoutSeconds: 300,
        extra: {},
      },
      { x402Version: 2, scheme: 'upto', network: SOLANA_DEVNET_ID, extra: kind.extra ?? {} },
      [],
    );
  };
  const phase = (p: PaymentPayload, type: 'deposit' | 'claim', more: object = {}): PaymentPayload => ({
    ...p,
    payload: { ...p.payload, type, ...more },
  });
  const settle = async (p: PaymentPayload, requirements: PaymentRequirements) =>
    (
      await callAs(gw, seller.key, 'POST', '/facilitator/settle', {
        x402Version: 2,
        paymentPayload: p,
        paymentRequirements: requirements,
      })
    ).body as { success: boolean; errorReason?: string; transaction: string };

  before(async () => {
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    chain = await startTestChain();
    gw = await startTestGateway({
      storage,
      masterKey: new Uint8Array(randomBytes(32)),
      networks: new NetworkRegistry([chain.adapter]),
      confirmTimeoutMs: 3_000,
    });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      solana: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
    };
    // distribute pays the seller's token account: a first USDC mint opens it.
    await chain.localnet.mintUsdc(seller.solana, 1n);
  });

  after(async () => {
    // The test gateway disposes of the storage it was given.
    await gw?.close();
    await chain?.close();
  });

  it('a claim whose payload names an expiresAt 30 days after the deposit’s is refused; the escrow stays for the buyer', async () => {
    const buyer = await newBuyer();
    const requirements = await requirementsFor(seller.solana);
    const payload = await stockPayload(new UptoBuyer(buyer, { rpcUrl: chain.localnet.rpcUrl }), requirements);
    const deposit = await settle(phase(payload, 'deposit'), requirements);
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    assert.equal(await balance(buyer.address), 1_000_000n - MAX, 'the maximum is in escrow');

    const depositedExpiry = Number(payload.payload.expiresAt);
    const later = depositedExpiry + 30 * DAY_S;
    const claim = await settle(phase(payload, 'claim', { expiresAt: later }), requirements);
    assert.deepEqual(
      [claim.success, claim.errorReason !== undefined],
      [false, true],
      `a claim with an expiry the buyer never had is refused: ${JSON.stringify(claim)}`,
    );
    assert.equal(await balance(buyer.address), 1_000_000n - MAX, 'nothing left the escrow');
  });
});
