import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PAYMENT_CHANNELS_PROGRAM } from '@gate402/localnet';
import {
  type AccountMeta,
  AccountRole,
  type AccountSignerMeta,
  type Address,
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getProgramDerivedAddress,
  type Instruction,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { toClientSvmSigner, toFacilitatorSvmSigner } from '@x402/svm';
import { UptoSvmScheme as UptoBuyer } from '@x402/svm/upto/client';
import { UptoSvmScheme as UptoFacilitator } from '@x402/svm/upto/facilitator';
import { UptoSvmScheme as UptoSeller } from '@x402/svm/upto/server';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * Solana `upto` on the embedded localnet: the stock @x402/svm `upto` client, seller scheme and
 * facilitator scheme on one side, gate402's own payment-channels program (loaded by the localnet at
 * the canonical id) on the other. The buyer pays what the seller settles, not the maximum; what the
 * program must refuse is tried with transactions built by hand and fails on chain.
 */
const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const ED25519_PROGRAM = address('Ed25519SigVerify111111111111111111111111111');
const INSTRUCTIONS_SYSVAR = address('Sysvar1nstructions1111111111111111111111111');
const DEVNET_TREASURY_OWNER = address('4zTeC5mVqWLruDexgU2mV66p9t5vCA9JyiZqdGDUspap');
const PROGRAM = address(PAYMENT_CHANNELS_PROGRAM);

describe('x402 upto on Solana: stock @x402/svm against the localnet payment-channels program', () => {
  let chain: TestChain;
  let rpcUrl: string;
  let facilitatorKey: KeyPairSigner;
  let authorizer: KeyPairSigner;
  let facilitator: UptoFacilitator;
  let seller: UptoSeller;
  const mint = () => address(chain.localnet.usdcMint.address);

  before(async () => {
    chain = await startTestChain();
    rpcUrl = chain.localnet.rpcUrl;
    facilitatorKey = await generateKeyPairSigner();
    authorizer = await generateKeyPairSigner();
    chain.localnet.airdrop(facilitatorKey.address, 10_000_000_000n);
    facilitator = new UptoFacilitator(toFacilitatorSvmSigner(facilitatorKey, { defaultRpcUrl: rpcUrl }));
    seller = new UptoSeller({ receiverAuthorizerSigner: authorizer, rpcUrl });
  });
  after(() => chain.close());

  const balance = async (owner: Address): Promise<bigint> => {
    const [ata] = await findAssociatedTokenPda({ owner, mint: mint(), tokenProgram: TOKEN_PROGRAM_ADDRESS });
    const info = await createSolanaRpc(rpcUrl)
      .getTokenAccountBalance(ata, { commitment: 'confirmed' })
      .send();
    return BigInt(info.value.amount);
  };

  /** A buyer with `usdc` atomic units, and the seller's requirements for `max` as the stock seller makes them. */
  const setup = async (usdc: bigint, max: bigint) => {
    const buyer = await generateKeyPairSigner();
    chain.localnet.airdrop(buyer.address, 1_000_000_000n);
    await chain.localnet.mintUsdc(buyer.address, usdc);
    const payTo = (await generateKeyPairSigner()).address;
    await chain.localnet.mintUsdc(payTo, 1n); // the seller's token account exists
    const base: PaymentRequirements = {
      scheme: 'upto',
      network: DEVNET,
      asset: mint(),
      amount: max.toString(),
      payTo,
      maxTimeoutSeconds: 300,
      extra: {},
    };
    const requirements = await seller.enhancePaymentRequirements(
      base,
      { x402Version: 2, scheme: 'upto', network: DEVNET, extra: facilitator.getExtra(DEVNET) ?? {} },
      [],
    );
    const client = new UptoBuyer(toClientSvmSigner(buyer), { rpcUrl });
    const created = await client.createPaymentPayload(2, requirements);
    const paymentPayload = {
      x402Version: 2,
      accepted: requirements,
      payload: created.payload,
    } as PaymentPayload;
    return { buyer, payTo, requirements, paymentPayload };
  };

  const deposit = (paymentPayload: PaymentPayload, requirements: PaymentRequirements) =>
    facilitator.settle(
      { ...paymentPayload, payload: { ...paymentPayload.payload, type: 'deposit' } },
      requirements,
    );

  const claim = async (paymentPayload: PaymentPayload, requirements: PaymentRequirements, actual: bigint) => {
    const charged = { ...requirements, amount: actual.toString() };
    const extra = await seller.enrichSettlementPayload({
      phase: 'after-handler',
      paymentPayload,
      requirements: charged,
    } as never);
    return facilitator.settle(
      { ...paymentPayload, payload: { ...paymentPayload.payload, ...extra } },
      charged,
    );
  };

  /** A transaction of `instructions` paid by `feePayer`, run on the chain without committing: its error. */
  const onChain = async (instructions: Instruction[], feePayer: KeyPairSigner): Promise<string> => {
    const rpc = createSolanaRpc(rpcUrl);
    const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const wire = getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message));
    const { value } = await rpc
      .simulateTransaction(wire, { encoding: 'base64', sigVerify: true, commitment: 'confirmed' })
      .send();
    return JSON.stringify(value.err, (_k, v) => (typeof v === 'bigint' ? Number(v) : v));
  };
  const custom = (index: number, code: number) =>
    JSON.stringify({ InstructionError: [index, { Custom: code }] });

  /** The 50-byte voucher message and an Ed25519 precompile instruction over it, signed by `signer`. */
  const voucher = async (signer: KeyPairSigner, channel: Address, cumulative: bigint, expiresAt: bigint) => {
    const message = new Uint8Array(50);
    message.set([0x56, 0x01]);
    message.set(getAddressEncoder().encode(channel), 2);
    const view = new DataView(message.buffer);
    view.setBigUint64(34, cumulative, true);
    view.setBigInt64(42, expiresAt, true);
    const signature = new Uint8Array(await crypto.subtle.sign('Ed25519', signer.keyPair.privateKey, message));
    return ed25519Instruction(getAddressEncoder().encode(signer.address) as Uint8Array, signature, message);
  };
  const ed25519Instruction = (key: Uint8Array, signature: Uint8Array, message: Uint8Array): Instruction => {
    const data = new Uint8Array(112 + message.length);
    const view = new DataView(data.buffer);
    data[0] = 1;
    for (const [at, value] of [
      [2, 48],
      [4, 0xffff],
      [6, 16],
      [8, 0xffff],
      [10, 112],
      [12, message.length],
      [14, 0xffff],
    ] as const)
      view.setUint16(at, value, true);
    data.set(key, 16);
    data.set(signature, 48);
    data.set(message, 112);
    return { programAddress: ED25519_PROGRAM, data };
  };
  const settleAndSeal = (
    payee: KeyPairSigner | Address,
    channel: Address,
    hasVoucher: boolean,
  ): Instruction => {
    const payeeMeta: AccountMeta | AccountSignerMeta =
      typeof payee === 'string'
        ? { address: payee, role: AccountRole.READONLY }
        : { address: payee.address, role: AccountRole.READONLY_SIGNER, signer: payee };
    return {
      programAddress: PROGRAM,
      accounts: [
        payeeMeta,
        { address: channel, role: AccountRole.WRITABLE },
        { address: INSTRUCTIONS_SYSVAR, role: AccountRole.READONLY },
      ],
      data: new Uint8Array([4, hasVoucher ? 1 : 0]),
    };
  };
  const settleIx = (channel: Address): Instruction => ({
    programAddress: PROGRAM,
    accounts: [
      { address: channel, role: AccountRole.WRITABLE },
      { address: INSTRUCTIONS_SYSVAR, role: AccountRole.READONLY },
    ],
    data: new Uint8Array([2]),
  });
  const ata = async (owner: Address, ofMint: Address = mint()) =>
    (await findAssociatedTokenPda({ owner, mint: ofMint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
  /** distribute with the splits `recipients` (the stock facilitator's: payTo at 10,000 bps). */
  const distributeIx = async (
    c: { channel: Address; payer: Address; payTo: Address },
    options: { recipients?: Address[]; tail?: Address[]; mint?: Address; rentPayer?: Address } = {},
  ): Promise<Instruction> => {
    const recipients = options.recipients ?? [c.payTo];
    const ofMint = options.mint ?? mint();
    const data = new Uint8Array(5 + 34 * recipients.length);
    data[0] = 7;
    new DataView(data.buffer).setUint32(1, recipients.length, true);
    for (const [i, r] of recipients.entries()) {
      data.set(getAddressEncoder().encode(r), 5 + 34 * i);
      new DataView(data.buffer).setUint16(5 + 34 * i + 32, 10_000 / recipients.length, true);
    }
    const [eventAuthority] = await getProgramDerivedAddress({
      programAddress: PROGRAM,
      seeds: [new TextEncoder().encode('event_authority')],
    });
    const w = (a: Address) => ({ address: a, role: AccountRole.WRITABLE });
    const r = (a: Address) => ({ address: a, role: AccountRole.READONLY });
    const tail = options.tail ?? (await Promise.all(recipients.map((x) => ata(x, ofMint))));
    return {
      programAddress: PROGRAM,
      accounts: [
        w(c.channel),
        w(c.payer),
        w(options.rentPayer ?? facilitatorKey.address),
        w(await ata(c.channel, ofMint)),
        w(await ata(c.payer, ofMint)),
        w(await ata(facilitatorKey.address, ofMint)),
        w(await ata(DEVNET_TREASURY_OWNER, ofMint)),
        r(ofMint),
        r(TOKEN_PROGRAM_ADDRESS),
        r(eventAuthority),
        r(PROGRAM),
        ...tail.map(w),
      ],
      data,
    };
  };
  /** A deposited (open) channel of `max`, as the stock client and facilitator open it. */
  const openChannel = async (max = 5_000_000n) => {
    const s = await setup(10_000_000n, max);
    const opened = await deposit(s.paymentPayload, s.requirements);
    assert.equal(opened.success, true, JSON.stringify(opened));
    const p = s.paymentPayload.payload as { channelId: string; expiresAt: number };
    return { ...s, channel: address(p.channelId), expiresAt: BigInt(p.expiresAt), payer: s.buyer.address };
  };

  it('verifies, deposits the maximum, then settles the actual amount: the buyer pays 1.25 USDC of 5', async () => {
    const { buyer, payTo, requirements, paymentPayload } = await setup(10_000_000n, 5_000_000n);
    const verified = await facilitator.verify(paymentPayload, requirements);
    assert.equal(verified.isValid, true, JSON.stringify(verified));

    const opened = await deposit(paymentPayload, requirements);
    assert.equal(opened.success, true, JSON.stringify(opened));
    assert.equal(await balance(buyer.address), 5_000_000n, 'the deposit is the signed maximum');

    const settled = await claim(paymentPayload, requirements, 1_250_000n);
    assert.equal(settled.success, true, JSON.stringify(settled));
    assert.equal(settled.amount, '1250000');
    assert.equal(await balance(buyer.address), 10_000_000n - 1_250_000n, 'the buyer pays the settled amount');
    assert.equal(await balance(payTo), 1n + 1_250_000n, 'the seller receives it');
  });
  it('a seller that settles more than the maximum is refused; the buyer keeps the deposit until a claim', async () => {
    const c = await openChannel(2_000_000n);
    const refused = await claim(c.paymentPayload, c.requirements, 2_000_001n);
    assert.equal(refused.success, false);
    assert.equal(refused.errorReason, 'invalid_upto_svm_payload_settlement_exceeds_amount');
    // On chain: a voucher the authorizer signed above the deposit, one unit over.
    const over = await voucher(authorizer, c.channel, 2_000_001n, c.expiresAt);
    assert.equal(
      await onChain([over, settleAndSeal(facilitatorKey, c.channel, true)], facilitatorKey),
      custom(1, 235),
    );
    // Exactly the deposit is allowed.
    const all = await voucher(authorizer, c.channel, 2_000_000n, c.expiresAt);
    assert.equal(
      await onChain([all, settleAndSeal(facilitatorKey, c.channel, true)], facilitatorKey),
      'null',
    );
  });

  it('a voucher message altered after signing (a larger amount) fails the Ed25519 precompile', async () => {
    const c = await openChannel();
    const signed = await voucher(authorizer, c.channel, 1_000n, c.expiresAt);
    const data = new Uint8Array(signed.data as Uint8Array);
    new DataView(data.buffer).setBigUint64(112 + 34, 4_000_000n, true);
    const altered = await onChain(
      [{ ...signed, data }, settleAndSeal(facilitatorKey, c.channel, true)],
      facilitatorKey,
    );
    // The precompile (instruction 0) refuses it: PrecompileError::InvalidSignature.
    assert.equal(altered, custom(0, 2));
  });

  it('a claim twice: the stock facilitator and the chain refuse the second; the same voucher twice is not monotonic', async () => {
    const c = await openChannel();
    // settle (2) applies a voucher on an open channel; the same voucher again, or a lower one, is refused.
    const first = await voucher(authorizer, c.channel, 700_000n, c.expiresAt);
    assert.equal(await onChain([first, settleIx(c.channel)], facilitatorKey), 'null');

    const settled = await claim(c.paymentPayload, c.requirements, 700_000n);
    assert.equal(settled.success, true, JSON.stringify(settled));
    const again = await claim(c.paymentPayload, c.requirements, 700_000n);
    assert.equal(again.success, false);
    // The channel is distributed: nothing can be sealed or distributed again.
    const replay = await voucher(authorizer, c.channel, 900_000n, c.expiresAt);
    assert.equal(
      await onChain([replay, settleAndSeal(facilitatorKey, c.channel, true)], facilitatorKey),
      custom(1, 2),
    );
    assert.equal(await onChain([await distributeIx(c)], facilitatorKey), custom(0, 2400));
    assert.equal(await balance(c.payer), 10_000_000n - 700_000n);
  });

  it('the same voucher twice on an open channel is refused (not strictly above the settled amount)', async () => {
    const c = await openChannel();
    const v = await voucher(authorizer, c.channel, 300_000n, c.expiresAt);
    const rpc = createSolanaRpc(rpcUrl);
    // Land the first settle for real, then replay it.
    const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(facilitatorKey, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) => appendTransactionMessageInstructions([v, settleIx(c.channel)], m),
    );
    const signature = await rpc
      .sendTransaction(getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message)), {
        encoding: 'base64',
      })
      .send();
    for (;;) {
      const { value } = await rpc.getSignatureStatuses([signature]).send();
      if (value[0]?.confirmationStatus === 'confirmed' || value[0]?.confirmationStatus === 'finalized') {
        assert.equal(value[0].err, null);
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(await onChain([v, settleIx(c.channel)], facilitatorKey), custom(1, 234));
    const lower = await voucher(authorizer, c.channel, 299_999n, c.expiresAt);
    assert.equal(await onChain([lower, settleIx(c.channel)], facilitatorKey), custom(1, 234));
  });

  it('another payee: splits naming someone else, another recipient account, or a seal by someone else fail', async () => {
    const c = await openChannel();
    const thief = await generateKeyPairSigner();
    chain.localnet.airdrop(thief.address, 1_000_000_000n);
    await chain.localnet.mintUsdc(thief.address, 1n);
    // Seal the channel as the payee with a voucher, then try to redirect the payout.
    const v = await voucher(authorizer, c.channel, 1_000_000n, c.expiresAt);
    assert.equal(
      await onChain([v, settleAndSeal(thief, c.channel, true)], facilitatorKey),
      custom(1, 6),
      'only the channel payee seals',
    );
    assert.equal(
      await onChain([v, settleAndSeal(facilitatorKey.address, c.channel, true)], thief),
      custom(1, 1),
      'the payee must sign (the fee payer here is someone else)',
    );
    const sealThenPay = async (d: Instruction) =>
      onChain([v, settleAndSeal(facilitatorKey, c.channel, true), d], facilitatorKey);
    assert.equal(await sealThenPay(await distributeIx(c, { recipients: [thief.address] })), custom(2, 2407));
    assert.equal(
      await sealThenPay(await distributeIx(c, { tail: [await ata(thief.address)] })),
      custom(2, 2404),
    );
    assert.equal(await sealThenPay(await distributeIx(c)), 'null');
  });

  it('another mint, or a voucher signed by someone other than the authorizer, or expired, fails', async () => {
    const c = await openChannel();
    const nativeMint = address('So11111111111111111111111111111111111111112');
    const v = await voucher(authorizer, c.channel, 1_000_000n, c.expiresAt);
    assert.equal(
      await onChain(
        [v, settleAndSeal(facilitatorKey, c.channel, true), await distributeIx(c, { mint: nativeMint })],
        facilitatorKey,
      ),
      custom(2, 7),
    );
    const stranger = await generateKeyPairSigner();
    const forged = await voucher(stranger, c.channel, 1_000_000n, c.expiresAt);
    assert.equal(
      await onChain([forged, settleAndSeal(facilitatorKey, c.channel, true)], facilitatorKey),
      custom(1, 237),
    );
    const expired = await voucher(authorizer, c.channel, 1_000_000n, 1_000n);
    assert.equal(
      await onChain([expired, settleAndSeal(facilitatorKey, c.channel, true)], facilitatorKey),
      custom(1, 233),
    );
    const other = await openChannel();
    const wrongChannel = await voucher(authorizer, other.channel, 1_000_000n, c.expiresAt);
    assert.equal(
      await onChain([wrongChannel, settleAndSeal(facilitatorKey, c.channel, true)], facilitatorKey),
      custom(1, 232),
    );
    // Nothing moved: the buyer still has only the deposit out.
    assert.equal(await balance(c.payer), 5_000_000n);
  });

  it('a zero charge (the stock seller cancels) returns the whole deposit', async () => {
    const c = await openChannel();
    const refunded = await claim(c.paymentPayload, c.requirements, 0n);
    assert.equal(refunded.success, true, JSON.stringify(refunded));
    assert.equal(await balance(c.payer), 10_000_000n);
  });
  /** Sends `instructions` for real and waits until the transaction is confirmed without an error. */
  const send = async (instructions: Instruction[], feePayer: KeyPairSigner) => {
    const rpc = createSolanaRpc(rpcUrl);
    const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const wire = getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message));
    const signature = await rpc.sendTransaction(wire, { encoding: 'base64' }).send();
    for (;;) {
      const { value } = await rpc.getSignatureStatuses([signature]).send();
      const status = value[0];
      if (status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized') {
        assert.equal(status.err, null);
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  /** A channel opened by hand (the payer is its own rent payer), with a grace period of one second. */
  const openByHand = async (deposit: bigint) => {
    const payer = await generateKeyPairSigner();
    chain.localnet.airdrop(payer.address, 1_000_000_000n);
    await chain.localnet.mintUsdc(payer.address, 10_000_000n);
    const payTo = (await generateKeyPairSigner()).address;
    await chain.localnet.mintUsdc(payTo, 1n);
    const salt = 7n;
    const openSlot = await createSolanaRpc(rpcUrl).getSlot({ commitment: 'confirmed' }).send();
    const u64 = (v: bigint) => {
      const b = new Uint8Array(8);
      new DataView(b.buffer).setBigUint64(0, v, true);
      return b;
    };
    const [channel] = await getProgramDerivedAddress({
      programAddress: PROGRAM,
      seeds: [
        new TextEncoder().encode('channel'),
        getAddressEncoder().encode(payer.address),
        getAddressEncoder().encode(facilitatorKey.address),
        getAddressEncoder().encode(mint()),
        getAddressEncoder().encode(authorizer.address),
        u64(salt),
        u64(openSlot),
      ],
    });
    const [eventAuthority] = await getProgramDerivedAddress({
      programAddress: PROGRAM,
      seeds: [new TextEncoder().encode('event_authority')],
    });
    const data = new Uint8Array(1 + 28 + 4 + 34);
    const view = new DataView(data.buffer);
    data[0] = 1;
    view.setBigUint64(1, salt, true);
    view.setBigUint64(9, deposit, true);
    view.setUint32(17, 1, true); // grace period: 1 s
    view.setBigUint64(21, openSlot, true);
    view.setUint32(29, 1, true);
    data.set(getAddressEncoder().encode(payTo), 33);
    view.setUint16(65, 10_000, true);
    const signerMeta: AccountSignerMeta = {
      address: payer.address,
      role: AccountRole.WRITABLE_SIGNER,
      signer: payer,
    };
    await send(
      [
        {
          programAddress: PROGRAM,
          accounts: [
            signerMeta,
            signerMeta,
            { address: facilitatorKey.address, role: AccountRole.READONLY },
            { address: mint(), role: AccountRole.READONLY },
            { address: authorizer.address, role: AccountRole.READONLY },
            { address: channel, role: AccountRole.WRITABLE },
            { address: await ata(payer.address), role: AccountRole.WRITABLE },
            { address: await ata(channel), role: AccountRole.WRITABLE },
            { address: TOKEN_PROGRAM_ADDRESS, role: AccountRole.READONLY },
            { address: address('11111111111111111111111111111111'), role: AccountRole.READONLY },
            { address: address('SysvarRent111111111111111111111111111111111'), role: AccountRole.READONLY },
            { address: address('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL'), role: AccountRole.READONLY },
            { address: eventAuthority, role: AccountRole.READONLY },
            { address: PROGRAM, role: AccountRole.READONLY },
          ],
          data,
        },
      ],
      payer,
    );
    return { payer, payTo, channel };
  };
  const payerIx = (
    disc: number,
    payer: KeyPairSigner,
    channel: Address,
    more: Address[] = [],
    extra: Uint8Array = new Uint8Array(),
  ): Instruction => {
    const payerMeta: AccountSignerMeta = {
      address: payer.address,
      role: AccountRole.READONLY_SIGNER,
      signer: payer,
    };
    return {
      programAddress: PROGRAM,
      accounts: [
        payerMeta,
        { address: channel, role: AccountRole.WRITABLE },
        ...more.map((a, i) => ({ address: a, role: i < 2 ? AccountRole.WRITABLE : AccountRole.READONLY })),
      ],
      data: new Uint8Array([disc, ...extra]),
    };
  };
  /** Seals a closing channel once its grace period has passed (the chain's clock decides). */
  const sealWhenDue = async (channel: Address, feePayer: KeyPairSigner) => {
    const seal: Instruction = {
      programAddress: PROGRAM,
      accounts: [{ address: channel, role: AccountRole.WRITABLE }],
      data: new Uint8Array([6]),
    };
    for (;;) {
      const err = await onChain([seal], feePayer);
      if (err === 'null') break;
      assert.equal(err, custom(0, 2201), 'before the grace period ends, seal waits');
      await new Promise((r) => setTimeout(r, 100));
    }
    await send([seal], feePayer);
  };

  it('the buyer gets the whole deposit back alone: requestClose, seal after the grace period, distribute', async () => {
    const { payer, payTo, channel } = await openByHand(3_000_000n);
    assert.equal(await balance(payer.address), 7_000_000n);
    const stranger = await generateKeyPairSigner();
    chain.localnet.airdrop(stranger.address, 1_000_000_000n);
    assert.equal(
      await onChain([payerIx(5, stranger, channel)], stranger),
      custom(0, 5),
      'only the payer closes',
    );
    await send([payerIx(5, payer, channel)], payer);
    assert.equal(await onChain([payerIx(5, payer, channel)], payer), custom(0, 2), 'closing once');
    await sealWhenDue(channel, payer);
    const c = { channel, payer: payer.address, payTo };
    // The buyer opened it by hand, so the buyer is its rent payer too.
    await send([await distributeIx(c, { rentPayer: payer.address })], payer);
    assert.equal(await balance(payer.address), 10_000_000n, 'nothing was settled: everything back');
    assert.equal(await balance(payTo), 1n);
  });

  it('withdrawPayer refunds deposit - settled once; topUp raises the deposit, by the payer only', async () => {
    const { payer, payTo, channel } = await openByHand(1_000_000n);
    const tokenAccounts = [await ata(payer.address), await ata(channel), mint(), TOKEN_PROGRAM_ADDRESS];
    const amount = new Uint8Array(8);
    new DataView(amount.buffer).setBigUint64(0, 500_000n, true);
    const topUp = (who: KeyPairSigner) =>
      payerIx(
        3,
        who,
        channel,
        [tokenAccounts[0], tokenAccounts[1], tokenAccounts[2], tokenAccounts[3]] as Address[],
        amount,
      );
    const stranger = await generateKeyPairSigner();
    chain.localnet.airdrop(stranger.address, 1_000_000_000n);
    assert.equal(await onChain([topUp(stranger)], stranger), custom(0, 5));
    await send([topUp(payer)], payer);
    assert.equal(await balance(payer.address), 8_500_000n);
    // A voucher up to the raised deposit applies; one unit over does not.
    const expiresAt = BigInt(Math.floor(Date.now() / 1000) + 600);
    assert.equal(
      await onChain([await voucher(authorizer, channel, 1_500_001n, expiresAt), settleIx(channel)], payer),
      custom(1, 235),
    );
    await send([await voucher(authorizer, channel, 600_000n, expiresAt), settleIx(channel)], payer);
    const withdraw = payerIx(8, payer, channel, [
      await ata(channel),
      await ata(payer.address),
      mint(),
      TOKEN_PROGRAM_ADDRESS,
    ] as Address[]);
    assert.equal(await onChain([withdraw], payer), custom(0, 2), 'not before the channel is sealed');
    await send([payerIx(5, payer, channel)], payer);
    await sealWhenDue(channel, payer);
    await send([withdraw], payer);
    assert.equal(await balance(payer.address), 10_000_000n - 600_000n);
    assert.equal(await onChain([withdraw], payer), custom(0, 2300), 'once');
    // distribute then pays the settled 600,000 to the seller and no second refund.
    await send(
      [await distributeIx({ channel, payer: payer.address, payTo }, { rentPayer: payer.address })],
      payer,
    );
    assert.equal(await balance(payTo), 1n + 600_000n);
    assert.equal(await balance(payer.address), 10_000_000n - 600_000n);
    // Distributed: reclaim waits for the open-slot window (1,500 slots) to pass.
    const reclaim: Instruction = {
      programAddress: PROGRAM,
      accounts: [
        { address: channel, role: AccountRole.WRITABLE },
        { address: payer.address, role: AccountRole.WRITABLE },
      ],
      data: new Uint8Array([9]),
    };
    assert.equal(await onChain([reclaim], payer), custom(0, 2414));
  });
});
