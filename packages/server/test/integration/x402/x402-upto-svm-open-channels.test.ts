import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { address, createSolanaRpc, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { UptoSvmScheme as UptoBuyer } from '@x402/svm/upto/client';
import { UptoSvmScheme as UptoSeller } from '@x402/svm/upto/server';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { ChainError } from '../../../src/chains/chain-error.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { OPEN_SLOT_WINDOW } from '../../../src/chains/solana/payment-channel-program.ts';
import { channelRentHeld, openChannels } from '../../../src/services/facilitator/upto-open-channels.ts';
import { UptoEscrowSweep } from '../../../src/workers/upto-escrow-sweep.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { until } from '../../support/until.ts';
import { stockPayload } from '../../support/x402-buyer.ts';

const MAX = 50_000n;
const CAP = 2;
const BUYER_USDC = 1_000_000n;

/**
 * X402_UPTO_MAX_OPEN_CHANNELS and X402_UPTO_MAX_CHANNEL_RENT on gate402's own Solana `upto` facilitator:
 * one account (a seller with a colluding buyer making tiny deposits) may hold only CAP deposits unclaimed
 * per network, and its channels only so much of the fee payer's rent (a deposit's open makes the fee
 * payer pay the channel account's and its escrow token account's; the claim gives the second back, the
 * sweep's reclaim the first, 1,500 slots after the open). A claim gives the deposit's place back at once.
 * Stock `@x402/svm/upto` buyer payloads; a SQLite file (PostgreSQL when DATABASE_URL is set); the
 * embedded localnet (20 ms slots; the test moves it past a channel's 1,500-slot reclaim window at once).
 */
describe('x402 upto on Solana: an account holds at most X402_UPTO_MAX_OPEN_CHANNELS unclaimed deposits and X402_UPTO_MAX_CHANNEL_RENT of rent', () => {
  let chain: TestChain;
  let storage: TempStorage;
  let gw: TestGateway;
  let seller: { key: string; accountId: string; solana: string };
  let feePayer: string;
  const usdc = () => chain.localnet.usdcMint.address;
  const rpc = () => createSolanaRpc(chain.localnet.rpcUrl);
  const usdcOf = async (owner: string): Promise<bigint> => {
    const [ata] = await findAssociatedTokenPda({
      owner: address(owner),
      mint: address(usdc()),
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    const { value } = await rpc().getTokenAccountBalance(ata, { commitment: 'confirmed' }).send();
    return BigInt(value.amount);
  };
  const lamportsOf = async (owner: string): Promise<bigint> =>
    (await rpc().getBalance(address(owner), { commitment: 'confirmed' }).send()).value;
  const newBuyer = async (): Promise<KeyPairSigner> => {
    const buyer = await generateKeyPairSigner();
    chain.localnet.airdrop(buyer.address, 1_000_000_000n);
    await chain.localnet.mintUsdc(buyer.address, BUYER_USDC);
    return buyer;
  };
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
        maxTimeoutSeconds: 300,
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
  /** A buyer's signed open (not yet settled). */
  const signedDeposit = async () => {
    const buyer = await newBuyer();
    const requirements = await requirementsFor(seller.solana);
    const payload = await stockPayload(new UptoBuyer(buyer, { rpcUrl: chain.localnet.rpcUrl }), requirements);
    return { buyer, requirements, payload, deposit: () => settle(phase(payload, 'deposit'), requirements) };
  };
  const open = () => openChannels(gw.store.sponsoredFees, seller.accountId, chain.adapter.info.id);
  const rentHeld = () => channelRentHeld(gw.store.sponsoredFees, seller.accountId, chain.adapter.info.id);
  const rent = async () => {
    const escrow = gw.services.facilitator.uptoSchemeFor(chain.adapter.info.id)?.escrow;
    assert.ok(escrow !== undefined);
    return escrow.rent();
  };
  /** The rent the chain says these channels hold of the fee payer's: an open one both, a distributed one its account's. */
  const rentOnChain = async (channels: readonly PaymentPayload[]): Promise<bigint> => {
    let total = 0n;
    for (const p of channels) {
      const { value } = await rpc()
        .getAccountInfo(address(String(p.payload.channelId)), { encoding: 'base64', commitment: 'confirmed' })
        .send();
      total += value === null ? 0n : value.lamports;
      const [escrow] = await findAssociatedTokenPda({
        owner: address(String(p.payload.channelId)),
        mint: address(usdc()),
        tokenProgram: TOKEN_PROGRAM_ADDRESS,
      });
      const token = await rpc()
        .getAccountInfo(escrow, { encoding: 'base64', commitment: 'confirmed' })
        .send();
      total += token.value === null ? 0n : token.value.lamports;
    }
    return total;
  };
  const sol = (lamports: bigint) =>
    `${lamports / 1_000_000_000n}.${(lamports % 1_000_000_000n).toString().padStart(9, '0')}`;
  const sweep = () =>
    new UptoEscrowSweep({
      store: gw.store,
      networks: gw.networks,
      facilitator: gw.services.facilitator,
      instanceId: `sweep-${randomBytes(4).toString('hex')}`,
      leaseMs: 1,
    }).runOnce();

  const held: { payload: PaymentPayload; requirements: PaymentRequirements }[] = [];
  const masterKey = new Uint8Array(randomBytes(32));
  const start = async (adapter: ChainAdapter, maxUptoChannelRent = '1') => {
    const started = await startTestGateway({
      storage,
      masterKey,
      networks: new NetworkRegistry([adapter]),
      confirmTimeoutMs: 3_000,
      // A daily fee budget with room for many deposits: the caps, not the budget, are what refuse.
      feeBudget: { budgets: { solana: '1' }, maxOpenUptoChannels: CAP, maxUptoChannelRent },
      // Removed by the suite's `after`, once.
      disposeStorage: false,
    });
    await started.services.facilitator.start();
    return started;
  };

  before(async () => {
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    chain = await startTestChain();
    gw = await start(chain.adapter);
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      solana: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
    };
    await chain.localnet.mintUsdc(seller.solana, 1n);
    feePayer = gw.services.facilitator.supported().signers['solana:*']?.[0] ?? '';
  });

  after(async () => {
    await gw?.close();
    await chain?.close();
    await storage?.dispose();
  });

  it('a deposit whose open fails (the node refuses it) gives its place back: no channel holds rent', async () => {
    await gw.close();
    const refusing: ChainAdapter = Object.create(chain.adapter, {
      broadcast: {
        value: async () => {
          throw new ChainError('rejected', 'refused by the test node');
        },
      },
    });
    gw = await start(refusing);
    const failing = await signedDeposit();
    const failed = await failing.deposit();
    assert.equal(failed.success, false, JSON.stringify(failed));
    // It was claimed (its place taken) and then failed, not refused by the cap.
    const key = gw.services.facilitator
      .uptoSchemeFor(chain.adapter.info.id)
      ?.escrow?.depositKey(failing.payload.payload);
    assert.ok(key !== undefined);
    assert.equal((await gw.store.settlements.get(key))?.status, 'failed');
    assert.equal(await open(), 0n, 'the failed deposit holds no place');
    assert.equal(await rentHeld(), 0n, 'nor any rent');
    assert.equal(await usdcOf(failing.buyer.address), BUYER_USDC);
    await gw.close();
    gw = await start(chain.adapter);
  });

  it('concurrent deposits never take more than the cap: of CAP + 1 at once, CAP open and one is refused', async () => {
    const signed = await Promise.all(Array.from({ length: CAP + 1 }, () => signedDeposit()));
    const answers = await Promise.all(signed.map((s) => s.deposit()));
    const won = signed.filter((_, i) => answers[i]?.success === true);
    assert.equal(won.length, CAP, JSON.stringify(answers));
    const refused = answers.filter((a) => !a.success);
    assert.deepEqual(
      refused.map((a) => a.errorReason),
      ['upto_open_channels_exceeded'],
      JSON.stringify(refused),
    );
    assert.match(refused[0]?.errorMessage ?? '', /X402_UPTO_MAX_OPEN_CHANNELS/);
    assert.equal(await open(), BigInt(CAP));
    const { account, escrow } = await rent();
    assert.equal(await rentHeld(), BigInt(CAP) * (account + escrow));
    assert.equal(await rentOnChain(won.map((s) => s.payload)), BigInt(CAP) * (account + escrow));
    for (const s of signed) {
      const deposited = won.includes(s);
      assert.equal(await usdcOf(s.buyer.address), deposited ? BUYER_USDC - MAX : BUYER_USDC);
    }
    held.push(...won.map(({ payload, requirements }) => ({ payload, requirements })));
  });

  it('a deposit beyond the cap is refused before anything is sent: the fee payer’s SOL and the buyer’s USDC are unchanged', async () => {
    const next = await signedDeposit();
    const lamports = await lamportsOf(feePayer);
    const refused = await next.deposit();
    assert.deepEqual([refused.success, refused.errorReason], [false, 'upto_open_channels_exceeded']);
    assert.equal(await lamportsOf(feePayer), lamports, 'no rent, no fee');
    assert.equal(await usdcOf(next.buyer.address), BUYER_USDC);
    assert.equal(await open(), BigInt(CAP));
    // Refused again (not answered as a settlement of it: nothing was stored).
    const again = await next.deposit();
    assert.equal(again.errorReason, 'upto_open_channels_exceeded');
    // A claim gives its deposit's place back at once: the escrow is closed, only the channel account's
    // rent is still the fee payer's until reclaimed, and that is X402_UPTO_MAX_CHANNEL_RENT's to bound.
    const first = held[0];
    assert.ok(first !== undefined);
    const claimed = await settle(phase(first.payload, 'claim'), { ...first.requirements, amount: '1000' });
    assert.equal(claimed.success, true, JSON.stringify(claimed));
    assert.equal(await open(), BigInt(CAP - 1));
    assert.equal(
      await rentHeld(),
      await rentOnChain(held.map((h) => h.payload)),
      'what the chain still holds',
    );
    const deposit = await next.deposit();
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    held.push({ payload: next.payload, requirements: next.requirements });
    assert.equal(await open(), BigInt(CAP));
    assert.equal(await rentHeld(), await rentOnChain(held.map((h) => h.payload)));
  });

  it('claimed channels the sweep has not reclaimed yet count against X402_UPTO_MAX_CHANNEL_RENT, not the open deposits', async () => {
    const second = held[1];
    assert.ok(second !== undefined);
    const claimed = await settle(phase(second.payload, 'claim'), { ...second.requirements, amount: '1000' });
    assert.equal(claimed.success, true, JSON.stringify(claimed));
    assert.equal(await open(), BigInt(CAP - 1), 'room for one more deposit');
    const heldNow = await rentHeld();
    assert.equal(heldNow, await rentOnChain(held.map((h) => h.payload)));
    const { account, escrow } = await rent();
    // A rent budget one lamport short of one more deposit refuses it, though a place is free.
    await gw.close();
    gw = await start(chain.adapter, sol(heldNow + account + escrow - 1n));
    const next = await signedDeposit();
    const lamports = await lamportsOf(feePayer);
    const refused = await next.deposit();
    assert.deepEqual([refused.success, refused.errorReason], [false, 'upto_open_channels_exceeded']);
    assert.match(refused.errorMessage ?? '', /X402_UPTO_MAX_CHANNEL_RENT/);
    assert.equal(await lamportsOf(feePayer), lamports, 'no rent, no fee');
    assert.equal(await usdcOf(next.buyer.address), BUYER_USDC);
    assert.equal(await rentHeld(), heldNow);
    // Within its open-slot window a claimed channel is not reclaimed: its rent stays counted.
    assert.deepEqual(
      (await sweep()).filter((s) => s.action === 'reclaimed'),
      [],
      'nothing reclaimed inside the window',
    );
    assert.equal((await next.deposit()).errorReason, 'upto_open_channels_exceeded');
  });

  it('once the sweep reclaims the claimed channels’ rent, the account may open one more', async () => {
    // The chain passes the window at once (1,500 slots were 30 s of 20 ms slots, waited out in 2 s polls).
    chain.localnet.advanceSlots(Number(OPEN_SLOT_WINDOW) + 1);
    const claimedChannels = held.slice(0, 2).map((h) => String(h.payload.payload.channelId));
    const reclaimed = new Set<string>();
    await until('the sweep reclaimed the claimed channels past their 1,500 slots', async () => {
      for (const s of await sweep()) if (s.action === 'reclaimed') reclaimed.add(s.escrow);
      return claimedChannels.every((c) => reclaimed.has(c));
    });
    const { account, escrow } = await rent();
    assert.equal(await rentHeld(), account + escrow, 'the one unclaimed deposit');
    assert.equal(await rentHeld(), await rentOnChain(held.map((h) => h.payload)));
    assert.equal(await open(), BigInt(CAP - 1));
    const next = await signedDeposit();
    const deposit = await next.deposit();
    assert.equal(deposit.success, true, JSON.stringify(deposit));
    assert.equal(await open(), BigInt(CAP));
    assert.equal((await (await signedDeposit()).deposit()).errorReason, 'upto_open_channels_exceeded');
  });
});
