import type { webcrypto } from 'node:crypto';
import {
  address,
  appendTransactionMessageInstructions,
  type Base58EncodedBytes,
  createKeyPairFromBytes,
  createKeyPairSignerFromBytes,
  createSolanaRpcFromTransport,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  getTransactionEncoder,
  type Instruction,
  type KeyPairSigner,
  partiallySignTransaction,
  pipe,
  type Rpc,
  type SolanaRpcApi,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Transaction,
} from '@solana/kit';
import { decodeBase58 } from '../../domain/base58.ts';
import type { SettlementRecord } from '../../domain/records/settlement-records.ts';
import type { X402Reason } from '../../domain/x402-reasons.ts';
import {
  type ExactRefusal,
  type ExactRequirements,
  type ExactVerdict,
  refuse,
  type SettlementDraft,
} from '../exact-scheme.ts';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import type { EscrowRent, SweptEscrow, UptoEscrow, UptoScheme } from '../upto-scheme.ts';
import { type ChannelOpen, paysAllTo, readChannelOpen } from './channel-open.ts';
import { ed25519Instruction, signVoucher, voucherMessage, voucherSignedBy } from './channel-voucher.ts';
import type { SvmFeePayer } from './exact-svm-scheme.ts';
import { failoverTransport } from './failover-transport.ts';
import {
  ALL_BPS,
  CHANNEL_PAYEE_OFFSET,
  CHANNEL_SIZE,
  type ChannelAccount,
  decodeChannel,
  distributeInstruction,
  distributionHashOf,
  OPEN_SLOT_WINDOW,
  PAYMENT_CHANNELS_PROGRAM,
  reclaimInstruction,
  settleAndSealInstruction,
  tokenAccountOf,
} from './payment-channel-program.ts';
import { toChainError } from './solana-errors.ts';

/** The longest a channel may stay claimable (the stock facilitator's default maxChannelLifetimeSecs). */
export const UPTO_SVM_MAX_CHANNEL_LIFETIME_SECONDS = 3_600;
/** Clock skew allowed between buyer and facilitator for `expiresAt` (as the stock facilitator). */
const EXPIRES_AT_SKEW_SECONDS = 60;
/**
 * How much of `maxTimeoutSeconds` a deposit's `expiresAt` may have used up when the deposit is verified.
 * The stock @x402/svm upto client writes `expiresAt` = its own now + maxTimeoutSeconds, so this covers the
 * payload's way to the seller and on to here, and a buyer's clock behind ours. It is at most half of
 * maxTimeoutSeconds, so that a short offer (protect()'s default is 60 s) still leaves its seller half of
 * it to claim: nothing signs `expiresAt`, and the claim after the handler is held to it, so a buyer
 * writing one seconds ahead would have the handler served and every claim refused expired.
 */
const DEPOSIT_AGE_ALLOWANCE_SECONDS = 30;
/** Past a channel's last claimable moment, what the sweep waits more: a claim signed before it has expired (150 blocks). */
const SWEEP_MARGIN_SECONDS = 300;
/** A blockhash is valid for 150 blocks: the latest a transaction signed now can land. */
const BLOCKHASH_VALIDITY_BLOCKS = 150n;
const LAMPORTS_PER_SIGNATURE = 5_000n;
/** The claim: Ed25519 precompile, settleAndSeal, distribute (two token transfers, an account closed). */
const CLAIM_COMPUTE_UNIT_LIMIT = 200_000;
/** Token-account size (SPL Token); the escrow account open creates, its rent paid by the fee payer. */
const TOKEN_ACCOUNT_SIZE = 165n;

/** The stock `upto` SVM payload (UptoSvmPayloadV2 of @x402/svm), with the phase the seller stamps. */
interface UptoSvmPayload {
  readonly from: string;
  readonly maxAmount: bigint;
  readonly deposit: bigint;
  readonly expiresAt: number;
  readonly validAfter: number;
  readonly nonce: string;
  readonly openSlot: string;
  readonly channelId: string;
  readonly authorizedSigner: string;
  readonly openTransaction: string;
  readonly voucherSignature: string | undefined;
  readonly type: 'deposit' | 'claim' | undefined;
}

/**
 * x402 `upto` on Solana through x402's payment-channels program, as @x402/svm's `upto` client, seller
 * and facilitator speak it (UptoScheme, with UptoEscrow's two phases):
 *
 * - DEPOSIT: the buyer's `open` transaction (a channel of `deposit` = the signed maximum, this
 *   facilitator its payee, fee payer and rent payer, the seller's `payTo` the one recipient of every
 *   settled unit) is co-signed and sent as it was signed. Its settlement key names the channel.
 * - CLAIM: one transaction of this facilitator's own — an Ed25519 voucher instruction (the receiver
 *   authorizer's signature over channel, actual amount and expiry: the seller's, or this facilitator's
 *   own when the seller delegates to the `receiverAuthorizer` it advertises), settleAndSeal and
 *   distribute: the actual amount to payTo, the rest of the deposit back to the buyer, the escrow's rent
 *   back to the fee payer. Settled at most once: the program seals the channel, and the claim's own
 *   settlement key (the channel's, phase `claim`) is claimed before it is sent.
 *
 * The fee payer pays the open's rent (returned by the claim, or by the sweep of a channel nobody
 * claimed in time) and both transactions' fees.
 */
export class UptoSvmScheme implements UptoScheme {
  readonly family = 'solana' as const;
  readonly scheme = 'upto' as const;
  readonly exceedsMaximumReason: X402Reason = 'invalid_upto_svm_payload_settlement_exceeds_amount';
  private readonly rpc: Rpc<SolanaRpcApi>;
  private readonly assets: ReadonlySet<string>;
  private readonly decimals = new Map<string, Promise<number>>();
  private deployed = false;
  private signer: Promise<KeyPairSigner> | undefined;
  private voucherKey: Promise<webcrypto.CryptoKeyPair> | undefined;
  private rentHeld: Promise<EscrowRent> | undefined;

  readonly escrow: UptoEscrow = {
    phaseOf: (payload) => parsePayload(payload)?.type,
    depositKey: (payload) => {
      const p = parsePayload(payload);
      return p === undefined ? undefined : this.keyOf('deposit', p.channelId);
    },
    isDeposit: (key) => key.startsWith(`${this.network}:upto:deposit:`),
    isClaim: (key) => key.startsWith(`${this.network}:upto:claim:`),
    rent: () => this.rent(),
    holdsAccount: async (key) => {
      const channel = key.slice(key.lastIndexOf(':') + 1);
      return (await this.channel(channel)) !== undefined;
    },
    claimRefusal: (payload, deposit, now) => {
      const p = parsePayload(payload);
      if (p === undefined) return undefined;
      // verifyDeposit held the deposit's expiresAt within this of the moment it settled; a claim naming a
      // later one (or coming after it) would take the escrow past the buyer's deadline and race the sweep.
      const deadline =
        Math.floor(deposit.createdAt / 1000) +
        UPTO_SVM_MAX_CHANNEL_LIFETIME_SECONDS +
        EXPIRES_AT_SKEW_SECONDS;
      if (p.expiresAt > deadline)
        return {
          reason: 'invalid_upto_svm_payload_expires_at_mismatch',
          message: `the claim's expiresAt ${p.expiresAt} is later than its deposit allowed (${deadline})`,
        };
      if (Math.floor(now / 1000) >= deadline)
        return {
          reason: 'invalid_upto_svm_payload_expired',
          message: "the deposit's time to claim has passed",
        };
      return undefined;
    },
    sweep: (depositOf, now) => this.sweep(depositOf, now),
  };

  /**
   * @param assets the mints it settles (as exact: a channel in a mint anyone can create costs the fee
   * payer the same rent and fees as one in USDC).
   */
  constructor(
    endpoints: RpcEndpoints,
    private readonly feePayer: SvmFeePayer,
    private readonly network: string,
    assets: readonly string[],
    private readonly now: () => number,
  ) {
    this.rpc = createSolanaRpcFromTransport(failoverTransport(endpoints));
    this.assets = new Set(assets);
  }

  /** Looks whether the chain carries the payment-channels program; upto is offered only where it does. */
  async detect(): Promise<boolean> {
    const { value } = await this.rpc
      .getAccountInfo(PAYMENT_CHANNELS_PROGRAM, { encoding: 'base64', commitment: 'confirmed' })
      .send();
    this.deployed = value?.executable === true;
    return this.deployed;
  }

  available(): boolean {
    return this.deployed;
  }

  signers(): string[] {
    return [this.feePayer.address];
  }

  /** The fee payer, which also signs vouchers for sellers that delegate the receiver authorizer to it. */
  supportedExtra(): Record<string, unknown> {
    return { feePayer: this.feePayer.address, receiverAuthorizer: this.feePayer.address };
  }

  signedMaximum(payload: Readonly<Record<string, unknown>>) {
    const p = parsePayload(payload);
    return p === undefined ? undefined : { amount: p.maxAmount, payer: p.from };
  }

  /** `<network>:upto:deposit:<channel>` or `<network>:upto:claim:<channel>`: one of each per channel. */
  settlementKey(payload: Readonly<Record<string, unknown>>): string | undefined {
    const p = parsePayload(payload);
    return p === undefined ? undefined : this.keyOf(p.type === 'claim' ? 'claim' : 'deposit', p.channelId);
  }

  private keyOf(phase: 'deposit' | 'claim', channel: string): string {
    return `${this.network}:upto:${phase}:${channel}`;
  }

  /**
   * What the open pays, against requirements whose amount is the signed maximum: the channel is this
   * facilitator's, in the asset, of exactly the maximum, every settled unit to payTo, its voucher signer
   * the receiver authorizer the requirements name.
   */
  async checkTerms(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<ExactRefusal | undefined> {
    const read = await this.readTerms(payload, req);
    return 'valid' in read ? read : undefined;
  }

  private async readTerms(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<ExactRefusal | { p: UptoSvmPayload; open: ChannelOpen }> {
    const p = parsePayload(payload);
    if (p === undefined)
      return refuse('invalid_payload', 'the payload is not an x402 upto payment-channel payload');
    const open = await readChannelOpen(p.openTransaction);
    if (typeof open === 'string') return refuse('invalid_upto_svm_payload_open_transaction', open, p.from);
    const feePayerAsked = req.extra.feePayer;
    if (
      open.feePayer !== this.feePayer.address ||
      (feePayerAsked !== undefined && feePayerAsked !== open.feePayer)
    )
      return refuse(
        'facilitator_mismatch',
        `the channel's fee payer is not this facilitator's (${this.feePayer.address})`,
        p.from,
      );
    if (open.payee !== this.feePayer.address)
      return refuse(
        'invalid_upto_svm_payload_open_transaction',
        'the channel’s payee must be the fee payer',
        p.from,
      );
    if (!this.assets.has(req.asset))
      return refuse('unsupported_asset', `${req.asset} is not an asset this facilitator settles`, p.from);
    if (open.mint !== req.asset)
      return refuse(
        'asset_mismatch',
        `the channel holds ${open.mint}, the requirements ask for ${req.asset}`,
        p.from,
      );
    if (!paysAllTo(open, req.payTo))
      return refuse(
        'invalid_upto_svm_payload_recipient_mismatch',
        `the channel does not pay everything settled to ${req.payTo}`,
        p.from,
      );
    if (open.payer !== p.from)
      return refuse(
        'invalid_upto_svm_payload_payer_mismatch',
        `the open's payer ${open.payer} is not payload.from`,
        p.from,
      );
    if (
      open.channel !== p.channelId ||
      open.salt.toString() !== p.nonce ||
      open.openSlot.toString() !== p.openSlot
    )
      return refuse(
        'invalid_upto_svm_payload_channel_id',
        'payload.channelId, nonce or openSlot is not the open’s',
        p.from,
      );
    if (open.deposit !== p.maxAmount || p.deposit !== p.maxAmount)
      return refuse(
        'invalid_upto_svm_payload_deposit_not_ceiling',
        'the deposit must be exactly the signed maximum',
        p.from,
      );
    if (p.maxAmount !== req.amount)
      return refuse(
        'invalid_upto_svm_payload_amount_mismatch',
        `the payload signs ${p.maxAmount}, the requirements offer ${req.amount}`,
        p.from,
      );
    if (open.authorizedSigner !== p.authorizedSigner || req.extra.receiverAuthorizer !== p.authorizedSigner)
      return refuse(
        'invalid_upto_svm_payload_receiver_authorizer',
        'the voucher signer is not extra.receiverAuthorizer',
        p.from,
      );
    if (req.extra.withdrawDelay !== open.gracePeriod)
      return refuse(
        'invalid_upto_svm_payment_requirements',
        `the channel's grace period is not extra.withdrawDelay`,
        p.from,
      );
    const program = req.extra.tokenProgram;
    if (program !== undefined && program !== open.tokenProgram)
      return refuse(
        'invalid_upto_svm_payment_requirements',
        'the open names another token program than extra.tokenProgram',
        p.from,
      );
    return { p, open };
  }

  /**
   * Deposit (a payload naming no phase, as POST /facilitator/verify gets it, or `deposit`): `req.amount`
   * is the maximum. Claim: `req.amount` is the actual amount, at most the maximum (the service checked).
   */
  async verify(payload: Readonly<Record<string, unknown>>, req: ExactRequirements): Promise<ExactVerdict> {
    const p = parsePayload(payload);
    if (p === undefined)
      return refuse('invalid_payload', 'the payload is not an x402 upto payment-channel payload');
    const terms = await this.readTerms(payload, { ...req, amount: p.maxAmount });
    if ('valid' in terms) return terms;
    const now = Math.floor(this.now() / 1000);
    if (now < p.validAfter)
      return refuse('invalid_upto_svm_payload_not_yet_active', 'validAfter is in the future', p.from);
    if (now >= p.expiresAt) return refuse('invalid_upto_svm_payload_expired', 'the payload expired', p.from);
    const decimals = await this.decimalsOf(req.asset);
    return p.type === 'claim'
      ? this.verifyClaim(p, req, decimals)
      : this.verifyDeposit(p, terms.open, req, now, decimals);
  }

  private async verifyDeposit(
    p: UptoSvmPayload,
    open: ChannelOpen,
    req: ExactRequirements,
    now: number,
    decimals: number,
  ): Promise<ExactVerdict> {
    if (p.voucherSignature !== undefined)
      return refuse(
        'invalid_upto_svm_payload_unexpected_voucher',
        'a voucher belongs to the claim only',
        p.from,
      );
    if (req.amount !== p.maxAmount)
      return refuse('invalid_upto_svm_payload_amount_mismatch', 'a deposit is of the signed maximum', p.from);
    // Bounded, so that an unclaimed channel's rent comes back (the sweep) within a known time.
    if (
      req.maxTimeoutSeconds > UPTO_SVM_MAX_CHANNEL_LIFETIME_SECONDS ||
      p.expiresAt > now + UPTO_SVM_MAX_CHANNEL_LIFETIME_SECONDS + EXPIRES_AT_SKEW_SECONDS
    )
      return refuse(
        'invalid_upto_svm_payload_channel_lifetime_exceeded',
        `a channel lives at most ${UPTO_SVM_MAX_CHANNEL_LIFETIME_SECONDS} s`,
        p.from,
      );
    if (p.expiresAt > now + req.maxTimeoutSeconds + EXPIRES_AT_SKEW_SECONDS)
      return refuse(
        'invalid_upto_svm_payload_expires_at_mismatch',
        'expiresAt is later than maxTimeoutSeconds allows',
        p.from,
      );
    // The claim is held to this expiresAt: it must leave the seller its maxTimeoutSeconds to claim.
    const used = Math.min(DEPOSIT_AGE_ALLOWANCE_SECONDS, Math.floor(req.maxTimeoutSeconds / 2));
    if (p.expiresAt < now + req.maxTimeoutSeconds - used)
      return refuse(
        'invalid_upto_svm_payload_expires_at_mismatch',
        `expiresAt leaves ${p.expiresAt - now} s to claim; maxTimeoutSeconds asks for ${req.maxTimeoutSeconds} (at least ${req.maxTimeoutSeconds - used} left at the deposit)`,
        p.from,
      );
    // distribute pays payTo's token account: without it every claim would fail, and the deposit wait for the sweep.
    const recipient = await tokenAccountOf(req.payTo, req.asset, open.tokenProgram);
    if (!(await this.exists(recipient)))
      return refuse(
        'invalid_upto_svm_settlement_simulation',
        `${req.payTo} has no token account for ${req.asset}: the seller must create it`,
        p.from,
      );
    const failed = await this.simulate(getBase64EncodedWireTransaction(open.transaction));
    if (failed !== undefined) return refuse(failed.reason, failed.message, p.from);
    return { valid: true, payer: p.from, decimals };
  }

  private async verifyClaim(
    p: UptoSvmPayload,
    req: ExactRequirements,
    decimals: number,
  ): Promise<ExactVerdict> {
    const built = await this.claimTransaction(p, req);
    if ('valid' in built) return built;
    const failed = await this.simulate(getBase64EncodedWireTransaction(built.transaction));
    if (failed !== undefined) return refuse('invalid_upto_svm_settlement_simulation', failed.message, p.from);
    return { valid: true, payer: p.from, decimals };
  }

  async prepare(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<SettlementDraft> {
    const p = parsePayload(payload);
    if (p === undefined) throw new Error('prepare() called on a payload that was not verified');
    if (p.type === 'claim') {
      const built = await this.claimTransaction(p, req);
      if ('valid' in built) throw new Error(`prepare() of a claim that no longer verifies: ${built.message}`);
      const prepared = {
        payer: p.from,
        transactionId: getSignatureFromTransaction(built.transaction),
        wire: new Uint8Array(getTransactionEncoder().encode(built.transaction)),
        lastValidBlockHeight: built.lastValidBlockHeight,
      };
      return { maxFee: LAMPORTS_PER_SIGNATURE, sign: async () => prepared };
    }
    const open = await readChannelOpen(p.openTransaction);
    if (typeof open === 'string') throw new Error('prepare() called on a payload that was not verified');
    const signed = await this.cosign(open.transaction);
    const [height, rent] = await Promise.all([
      this.call(() => this.rpc.getBlockHeight({ commitment: 'confirmed' }).send()),
      this.rent(),
    ]);
    const prepared = {
      payer: p.from,
      transactionId: getSignatureFromTransaction(signed),
      wire: new Uint8Array(getTransactionEncoder().encode(signed)),
      lastValidBlockHeight: height + BLOCKHASH_VALIDITY_BLOCKS,
    };
    // The worst case the fee payer lays out: both signatures, the priority fee, and the rent of the
    // channel and its escrow token account (given back when the channel closes).
    const priority = (open.computeUnitPrice * BigInt(open.computeUnitLimit) + 999_999n) / 1_000_000n;
    const maxFee = 2n * LAMPORTS_PER_SIGNATURE + priority + rent.account + rent.escrow;
    return { maxFee, sign: async () => prepared };
  }

  /**
   * The claim transaction, signed by the fee payer (and its voucher by the fee payer when the seller
   * delegated the receiver authorizer to it), against the channel as the chain holds it now; or why not.
   */
  private async claimTransaction(
    p: UptoSvmPayload,
    req: ExactRequirements,
  ): Promise<ExactRefusal | { transaction: Transaction; lastValidBlockHeight: bigint }> {
    const actual = req.amount;
    const expiresAt = BigInt(p.expiresAt);
    const message = voucherMessage(p.channelId, actual, expiresAt);
    let signature: Uint8Array;
    if (p.voucherSignature !== undefined) {
      if (!voucherSignedBy(message, p.voucherSignature, p.authorizedSigner))
        return refuse(
          'invalid_upto_svm_payload_voucher_signature',
          `the voucher is not ${p.authorizedSigner}'s for ${actual}`,
          p.from,
        );
      signature = decodeBase58(p.voucherSignature) ?? new Uint8Array(64);
    } else if (p.authorizedSigner === this.feePayer.address) {
      signature = await signVoucher(message, (await this.voucherKeys()).privateKey);
    } else {
      return refuse(
        'invalid_upto_svm_authorizer_address_mismatch',
        'no voucher, and the receiver authorizer is not this facilitator',
        p.from,
      );
    }
    const channel = await this.channel(p.channelId);
    const problem =
      channel === undefined ? 'the channel does not exist' : this.channelProblem(channel, p, req);
    if (problem !== undefined || channel === undefined)
      return refuse('invalid_upto_svm_channel_state', problem ?? 'the channel does not exist', p.from);
    const open = await readChannelOpen(p.openTransaction);
    if (typeof open === 'string') return refuse('invalid_upto_svm_payload_open_transaction', open, p.from);
    // The program applies a voucher only above what was settled: nothing to apply for 0 (a refund).
    const instructions: Instruction[] = [
      computeUnitLimit(CLAIM_COMPUTE_UNIT_LIMIT),
      ...(actual > 0n ? [ed25519Instruction(p.authorizedSigner, signature, message)] : []),
      settleAndSealInstruction(this.feePayer.address, p.channelId, actual > 0n),
      await distributeInstruction(
        { ...channel, address: p.channelId },
        [{ recipient: req.payTo, bps: ALL_BPS }],
        open.tokenProgram,
        this.network,
      ),
    ];
    return this.signOwn(instructions);
  }

  /** What makes a channel on chain not the one the payload opened for these requirements, if anything. */
  private channelProblem(c: ChannelAccount, p: UptoSvmPayload, req: ExactRequirements): string | undefined {
    if (c.status !== 'open') return `the channel is ${c.status}, not open`;
    if (c.payer !== p.from || c.payee !== this.feePayer.address || c.rentPayer !== this.feePayer.address)
      return 'the channel belongs to someone else';
    if (c.mint !== req.asset) return `the channel holds ${c.mint}`;
    if (c.authorizedSigner !== p.authorizedSigner) return 'the channel’s voucher signer is not the payload’s';
    if (c.deposit !== p.maxAmount || c.settled !== 0n)
      return 'the channel’s deposit or settled amount changed';
    if (c.distributionHash !== distributionHashOf([{ recipient: req.payTo, bps: ALL_BPS }]))
      return `the channel does not pay ${req.payTo}`;
    return undefined;
  }

  /**
   * UptoEscrow.sweep: open channels of this facilitator's whose deposit settled longer ago than a
   * channel may live (verify held `expiresAt` within that of the deposit, so no voucher applies any more)
   * are sealed with nothing settled and distributed — the whole deposit back to the buyer, the escrow
   * token account's rent to the fee payer; distributed ones past the open-slot window are reclaimed (the
   * channel account's rent). The seller each was opened for is its deposit settlement's payTo. A channel
   * whose deposit is not found settled here is left alone.
   */
  async sweep(
    depositOf: (settlementKey: string) => Promise<SettlementRecord | undefined>,
    now: number,
  ): Promise<SweptEscrow[]> {
    const accounts = await this.call(() =>
      this.rpc
        .getProgramAccounts(PAYMENT_CHANNELS_PROGRAM, {
          encoding: 'base64',
          commitment: 'confirmed',
          filters: [
            { dataSize: BigInt(CHANNEL_SIZE) },
            {
              memcmp: {
                offset: BigInt(CHANNEL_PAYEE_OFFSET),
                bytes: this.feePayer.address as unknown as Base58EncodedBytes,
                encoding: 'base58',
              },
            },
          ],
        })
        .send(),
    );
    const slot = await this.call(() => this.rpc.getSlot({ commitment: 'confirmed' }).send());
    const swept: SweptEscrow[] = [];
    for (const { pubkey, account } of accounts) {
      const channel = decodeChannel(new Uint8Array(Buffer.from(account.data[0], 'base64')));
      if (channel === undefined || channel.rentPayer !== this.feePayer.address) continue;
      if (channel.status === 'distributed') {
        if (BigInt(slot) <= channel.openSlot + OPEN_SLOT_WINDOW) continue;
        const sent = await this.sendOwn([reclaimInstruction(pubkey, this.feePayer.address)]);
        if (sent !== undefined)
          swept.push({
            escrow: pubkey,
            action: 'reclaimed',
            transactionId: sent,
            deposit: this.keyOf('deposit', pubkey),
          });
        continue;
      }
      if (channel.status !== 'open') continue;
      const due = await depositOf(this.keyOf('deposit', pubkey));
      const claimableUntil =
        (due?.createdAt ?? now) +
        (UPTO_SVM_MAX_CHANNEL_LIFETIME_SECONDS + EXPIRES_AT_SKEW_SECONDS + SWEEP_MARGIN_SECONDS) * 1000;
      if (due?.status !== 'settled' || now <= claimableUntil) continue;
      const program = await this.tokenProgramOf(channel.mint);
      const sent = await this.sendOwn([
        computeUnitLimit(CLAIM_COMPUTE_UNIT_LIMIT),
        settleAndSealInstruction(this.feePayer.address, pubkey, false),
        await distributeInstruction(
          { ...channel, address: pubkey },
          [{ recipient: due.payTo, bps: ALL_BPS }],
          program,
          this.network,
        ),
      ]);
      if (sent !== undefined)
        swept.push({
          escrow: pubkey,
          action: 'refunded',
          transactionId: sent,
          deposit: this.keyOf('deposit', pubkey),
        });
    }
    return swept;
  }

  /**
   * UptoEscrow.rent: the rent-exempt minimums of the channel account and of its escrow token account,
   * asked once (fixed by the runtime), so that what a deposit reserves is what its release gives back.
   */
  private rent(): Promise<EscrowRent> {
    this.rentHeld ??= Promise.all([
      this.call(() => this.rpc.getMinimumBalanceForRentExemption(BigInt(CHANNEL_SIZE)).send()),
      this.call(() => this.rpc.getMinimumBalanceForRentExemption(TOKEN_ACCOUNT_SIZE).send()),
    ]).then(([account, escrow]) => ({ account: BigInt(account), escrow: BigInt(escrow) }));
    this.rentHeld.catch(() => {
      this.rentHeld = undefined;
    });
    return this.rentHeld;
  }

  /** Signs `instructions` as the fee payer with the latest blockhash. */
  private async signOwn(
    instructions: Instruction[],
  ): Promise<{ transaction: Transaction; lastValidBlockHeight: bigint }> {
    const signer = await this.feePayerSigner();
    const { value: lifetime } = await this.call(() =>
      this.rpc.getLatestBlockhash({ commitment: 'confirmed' }).send(),
    );
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(signer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const transaction = await signTransactionMessageWithSigners(message);
    return { transaction, lastValidBlockHeight: lifetime.lastValidBlockHeight };
  }

  /** Simulates, then sends and waits for a transaction of the sweep's; its signature once it landed without error. */
  private async sendOwn(instructions: Instruction[]): Promise<string | undefined> {
    const { transaction, lastValidBlockHeight } = await this.signOwn(instructions);
    const wire = getBase64EncodedWireTransaction(transaction);
    if ((await this.simulate(wire)) !== undefined) return undefined;
    const signature = getSignatureFromTransaction(transaction);
    await this.call(() => this.rpc.sendTransaction(wire, { encoding: 'base64' }).send());
    for (;;) {
      const { value } = await this.call(() => this.rpc.getSignatureStatuses([signature]).send());
      const status = value[0];
      if (status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized')
        return status.err === null ? signature : undefined;
      const height = await this.call(() => this.rpc.getBlockHeight({ commitment: 'confirmed' }).send());
      if (height > lastValidBlockHeight) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private async channel(channel: string): Promise<ChannelAccount | undefined> {
    const { value } = await this.call(() =>
      this.rpc.getAccountInfo(address(channel), { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    if (value === null || value.owner !== PAYMENT_CHANNELS_PROGRAM) return undefined;
    return decodeChannel(new Uint8Array(Buffer.from(value.data[0], 'base64')));
  }

  private async tokenProgramOf(mint: string): Promise<string> {
    const { value } = await this.call(() =>
      this.rpc.getAccountInfo(address(mint), { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    if (value === null) throw new Error(`mint ${mint} not found`);
    return value.owner;
  }

  private async decimalsOf(mint: string): Promise<number> {
    let found = this.decimals.get(mint);
    if (found === undefined) {
      found = this.call(() =>
        this.rpc.getTokenSupply(address(mint), { commitment: 'confirmed' }).send(),
      ).then(({ value }) => value.decimals);
      found.catch(() => this.decimals.delete(mint));
      this.decimals.set(mint, found);
    }
    return found;
  }

  private async exists(account: string): Promise<boolean> {
    const { value } = await this.call(() =>
      this.rpc.getAccountInfo(address(account), { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    return value !== null;
  }

  private async simulate(wire: ReturnType<typeof getBase64EncodedWireTransaction>) {
    const { value } = await this.call(() =>
      this.rpc
        .simulateTransaction(wire, { encoding: 'base64', sigVerify: false, commitment: 'confirmed' })
        .send(),
    );
    if (value.err === null) return undefined;
    const logs = (value.logs ?? []).join('\n');
    const error = JSON.stringify(value.err, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    if (/insufficient funds/i.test(logs))
      return {
        reason: 'insufficient_funds' as const,
        message: 'the payer’s token account holds less than the deposit',
      };
    return {
      reason: 'invalid_upto_svm_settlement_simulation' as const,
      message: `the transaction would fail: ${error}`,
    };
  }

  private feePayerSigner(): Promise<KeyPairSigner> {
    this.signer ??= createKeyPairSignerFromBytes(this.feePayer.secretKey);
    return this.signer;
  }

  private voucherKeys(): Promise<webcrypto.CryptoKeyPair> {
    this.voucherKey ??= createKeyPairFromBytes(this.feePayer.secretKey);
    return this.voucherKey;
  }

  private async cosign(transaction: Transaction): Promise<Transaction> {
    return partiallySignTransaction([await this.voucherKeys()], transaction);
  }

  private call<T>(request: () => Promise<T>): Promise<T> {
    return request().catch((error: unknown) => {
      throw toChainError(error);
    });
  }
}

function computeUnitLimit(units: number): Instruction {
  const data = new Uint8Array(5);
  data[0] = 2;
  new DataView(data.buffer).setUint32(1, units, true);
  return { programAddress: address('ComputeBudget111111111111111111111111111111'), data };
}

/** The stock payload's fields, read strictly (amounts as bigint); undefined when it is not one. */
function parsePayload(payload: Readonly<Record<string, unknown>>): UptoSvmPayload | undefined {
  const s = (k: string) => (typeof payload[k] === 'string' ? (payload[k] as string) : undefined);
  const n = (k: string) => (Number.isSafeInteger(payload[k]) ? (payload[k] as number) : undefined);
  const amount = (k: string) => {
    const v = s(k);
    return v !== undefined && /^\d{1,20}$/.test(v) && BigInt(v) < 2n ** 64n ? BigInt(v) : undefined;
  };
  const [from, channelId, authorizedSigner, openTransaction, nonce, openSlot] = [
    'from',
    'channelId',
    'authorizedSigner',
    'openTransaction',
    'nonce',
    'openSlot',
  ].map(s);
  const [maxAmount, deposit] = [amount('maxAmount'), amount('deposit')];
  const [expiresAt, validAfter] = [n('expiresAt'), n('validAfter')];
  const type = payload.type;
  const voucher = payload.voucherSignature;
  if (
    from === undefined ||
    channelId === undefined ||
    authorizedSigner === undefined ||
    openTransaction === undefined ||
    nonce === undefined ||
    openSlot === undefined ||
    maxAmount === undefined ||
    deposit === undefined ||
    expiresAt === undefined ||
    validAfter === undefined ||
    (type !== undefined && type !== 'deposit' && type !== 'claim') ||
    (voucher !== undefined && typeof voucher !== 'string')
  )
    return undefined;
  return {
    from,
    channelId,
    authorizedSigner,
    openTransaction,
    nonce,
    openSlot,
    maxAmount,
    deposit,
    expiresAt,
    validAfter,
    type,
    voucherSignature: voucher,
  };
}
