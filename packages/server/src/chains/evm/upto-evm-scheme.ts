import {
  type Address,
  createPublicClient,
  getAddress,
  type Hash,
  isAddress,
  isHex,
  type PublicClient,
  parseAbi,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  type ExactRefusal,
  type ExactRequirements,
  type ExactVerdict,
  type LandedPayment,
  refuse,
  type SettlementDraft,
} from '../exact-scheme.ts';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import type { UptoScheme } from '../upto-scheme.ts';
import type { ChainDurability } from './chain-durability.ts';
import {
  checkEip2612Terms,
  EIP2612_GAS_SPONSORING,
  ERC20_APPROVAL_GAS_SPONSORING,
  eip2612PermitOf,
  eip2612PermitUsable,
  isMalformed,
} from './eip2612-gas-sponsoring.ts';
import {
  approvalCovers,
  approvalSuperseded,
  erc20ApprovalOf,
  planSponsoredApproval,
  type SponsoredApprovalRequest,
} from './erc20-approval-gas-sponsoring.ts';
import { toChainError } from './evm-errors.ts';
import { evmSettlementDraft } from './evm-settlement-draft.ts';
import { EVM_MAX_SETTLEMENT_GAS, type EvmFeePayer } from './exact-evm-scheme.ts';
import { failoverTransport } from './failover-transport.ts';
import { firstBlockSince } from './first-block-since.ts';
import { PERMIT2_ADDRESS } from './permit2-addresses.ts';
import { callOf } from './seller-paid-authorization.ts';
import { sponsoredApprovalPlanNow } from './sponsored-approval-draft.ts';
import {
  UPTO_PERMIT2_PROXY_ADDRESS,
  type UptoPermit,
  type UptoSettleCall,
  uptoSettleCall,
  uptoSettleCallOf,
} from './upto-permit2-proxy.ts';

/** The EIP-712 types x402's upto clients sign: PermitWitnessTransferFrom with the upto witness. */
const UPTO_PERMIT_TYPES = {
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'Witness' },
  ],
  TokenPermissions: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
  Witness: [
    { name: 'to', type: 'address' },
    { name: 'facilitator', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
} as const;

const READS_ABI = parseAbi([
  'function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function balanceOf(address account) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** A permit must stay valid this long after verification, so the settlement can still land. */
const DEADLINE_MARGIN_SECONDS = 6n;

/** How far before a settlement's claim (by this process's clock) its carrier is looked for on chain. */
const CLAIM_CLOCK_MARGIN_SECONDS = 600n;

const PAYLOAD_SHAPE =
  'payload must be {signature, permit2Authorization:{from, permitted:{token, amount}, spender, nonce, deadline, witness:{to, facilitator, validAfter}}}';

/**
 * x402 `upto` on EVM: the buyer signs a Permit2 PermitWitnessTransferFrom for a maximum, whose spender is
 * x402's upto proxy and whose witness names the recipient and this facilitator's fee payer; the
 * facilitator calls the proxy's `settle` with the actual amount and pays the gas. The proxy lets only
 * the witness's facilitator call it, so nobody else can carry (or choose the amount of) the payment.
 * Amount semantics per method: see UptoScheme.
 */
export class UptoEvmScheme implements UptoScheme {
  readonly family = 'evm' as const;
  readonly scheme = 'upto' as const;
  readonly exceedsMaximumReason = 'invalid_upto_evm_payload_settlement_exceeds_amount' as const;
  private readonly client: PublicClient;
  private readonly chainId: number;
  private ready = false;

  constructor(
    endpoints: RpcEndpoints,
    private readonly feePayer: EvmFeePayer,
    private readonly network: string,
    /** The tokens it settles: the fee payer pays the gas of whatever contract `asset` names. */
    private readonly assets: readonly string[],
    private readonly clock: () => number = Date.now,
    private readonly durability?: ChainDurability | undefined,
  ) {
    this.client = createPublicClient({ transport: failoverTransport(endpoints, endpoints.timeoutMs) });
    this.chainId = Number(network.slice('eip155:'.length));
  }

  /** Looks once whether the chain carries Permit2 and x402's upto proxy (GET /facilitator/supported). */
  async detect(): Promise<boolean> {
    this.ready = await this.deployed();
    return this.ready;
  }

  available(): boolean {
    return this.ready;
  }

  signers(): string[] {
    return [this.feePayer.address];
  }

  /**
   * x402's gas sponsoring, as for exact with Permit2: eip2612GasSponsoring (the upto proxy's
   * settleWithPermit) and erc20ApprovalGasSponsoring (the buyer's approval funded and sent first).
   */
  supportedExtensions(): readonly string[] {
    return this.ready ? [EIP2612_GAS_SPONSORING, ERC20_APPROVAL_GAS_SPONSORING] : [];
  }

  approvalSuperseded(wire: Uint8Array): Promise<boolean> {
    return approvalSuperseded(this.client, `0x${Buffer.from(wire).toString('hex')}`);
  }

  approvalCovers(wire: Uint8Array, amount: bigint, minedIn?: bigint): Promise<boolean> {
    return approvalCovers(this.client, `0x${Buffer.from(wire).toString('hex')}`, amount, minedIn);
  }

  /** What stock upto clients sign into the witness: the one facilitator that may settle. */
  supportedExtra(): Record<string, unknown> {
    return { facilitatorAddress: getAddress(this.feePayer.address) };
  }

  settlementKey(payload: Readonly<Record<string, unknown>>): string | undefined {
    const permit = uptoPermitOf(payload);
    // One (owner, nonce) transfers once, whatever the amount settled or the signature's encoding.
    return permit === undefined ? undefined : `${this.network}:upto:permit2:${permit.from}:${permit.nonce}`;
  }

  signedMaximum(payload: Readonly<Record<string, unknown>>): { amount: bigint; payer: string } | undefined {
    const permit = uptoPermitOf(payload);
    return permit === undefined ? undefined : { amount: permit.amount, payer: permit.from };
  }

  async checkTerms(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<ExactRefusal | undefined> {
    const permit = uptoPermitOf(payload);
    return permit === undefined ? refuse('invalid_payload', PAYLOAD_SHAPE) : this.termsOf(permit, req);
  }

  /**
   * What the permit pays against the requirements, from the payload alone: a token this facilitator
   * settles, the signed token, spender (x402's upto proxy), recipient, facilitator (this one's fee payer)
   * and maximum (`req.amount`, the maximum the requirements offer).
   */
  private termsOf(permit: UptoPermit, req: ExactRequirements): ExactRefusal | undefined {
    const payer = permit.from;
    if (
      !isAddress(req.asset) ||
      !this.assets.some((a) => isAddress(a) && getAddress(a) === getAddress(req.asset))
    ) {
      return refuse(
        'unsupported_asset',
        `asset ${req.asset} is not a token this facilitator settles (the network's known tokens and X402_EXTRA_ASSETS); see GET /networks`,
        payer,
      );
    }
    if (permit.token !== getAddress(req.asset)) {
      return refuse(
        'permit2_token_mismatch',
        `the permit is for token ${permit.token}, not ${req.asset}`,
        payer,
      );
    }
    if (permit.spender !== UPTO_PERMIT2_PROXY_ADDRESS) {
      return refuse(
        'invalid_permit2_spender',
        `the permit's spender must be x402's upto Permit2 proxy ${UPTO_PERMIT2_PROXY_ADDRESS}, not ${permit.spender}`,
        payer,
      );
    }
    if (!isAddress(req.payTo) || permit.to !== getAddress(req.payTo)) {
      return refuse(
        'invalid_permit2_recipient_mismatch',
        `the permit's witness pays ${permit.to}, not ${req.payTo}`,
        payer,
      );
    }
    if (permit.facilitator !== getAddress(this.feePayer.address)) {
      return refuse(
        'upto_facilitator_mismatch',
        `the permit's witness lets ${permit.facilitator} settle it, not this facilitator (${getAddress(this.feePayer.address)}, GET /facilitator/supported extra.facilitatorAddress)`,
        payer,
      );
    }
    if (permit.amount !== req.amount) {
      return refuse(
        'permit2_amount_mismatch',
        `the permit allows at most ${permit.amount}, the requirements offer ${req.amount}`,
        payer,
      );
    }
    return undefined;
  }

  /**
   * Every check short of broadcasting, against the maximum (`req.amount`): the terms, the validity
   * window, the signature, Permit2 and the proxy on the chain, the nonce, the allowance to Permit2 and
   * the balance (both for the whole maximum, which the seller may settle), then a simulation of the
   * proxy's `settle` of the maximum as the fee payer sends it.
   */
  async verify(payload: Readonly<Record<string, unknown>>, req: ExactRequirements): Promise<ExactVerdict> {
    const permit = uptoPermitOf(payload);
    if (permit === undefined) return refuse('invalid_payload', PAYLOAD_SHAPE);
    const terms = this.termsOf(permit, req);
    if (terms !== undefined) return terms;
    const payer = permit.from;
    const now = BigInt(Math.floor(this.clock() / 1000));
    if (permit.validAfter > now) {
      return refuse('permit2_not_yet_valid', 'the permit is not valid yet (witness.validAfter)', payer);
    }
    if (permit.deadline <= now + DEADLINE_MARGIN_SECONDS) {
      return refuse('permit2_deadline_expired', 'the permit has expired (deadline)', payer);
    }
    const signatureValid = await this.client
      .verifyTypedData({
        address: payer,
        domain: { name: 'Permit2', chainId: this.chainId, verifyingContract: PERMIT2_ADDRESS },
        types: UPTO_PERMIT_TYPES,
        primaryType: 'PermitWitnessTransferFrom',
        message: {
          permitted: { token: permit.token, amount: permit.amount },
          spender: permit.spender,
          nonce: permit.nonce,
          deadline: permit.deadline,
          witness: { to: permit.to, facilitator: permit.facilitator, validAfter: permit.validAfter },
        },
        signature: permit.signature,
      })
      .catch(() => false);
    if (!signatureValid)
      return refuse('invalid_permit2_signature', 'the permit signature does not verify', payer);
    const [deployed, spent, allowance, balance, decimals] = await this.call(() =>
      Promise.all([
        this.deployed(),
        this.nonceSpent(permit.from, permit.nonce),
        this.client.readContract({
          address: permit.token,
          abi: READS_ABI,
          functionName: 'allowance',
          args: [payer, PERMIT2_ADDRESS],
        }),
        this.client.readContract({
          address: permit.token,
          abi: READS_ABI,
          functionName: 'balanceOf',
          args: [payer],
        }),
        this.client.readContract({ address: permit.token, abi: READS_ABI, functionName: 'decimals' }),
      ]),
    );
    if (!deployed) {
      return refuse(
        'permit2_proxy_not_deployed',
        `this network has no Permit2 (${PERMIT2_ADDRESS}) or no x402 upto Permit2 proxy (${UPTO_PERMIT2_PROXY_ADDRESS})`,
        payer,
      );
    }
    if (spent)
      return refuse(
        'permit2_invalid_nonce',
        'the permit was already used (its Permit2 nonce is spent)',
        payer,
      );
    // x402's eip2612GasSponsoring: the EIP-2612 permit approves Permit2 in the settlement itself, for
    // exactly the signed maximum (the proxy reverts otherwise).
    const sponsored = permit.eip2612;
    if (sponsored !== undefined) {
      const refusal = checkEip2612Terms(sponsored, payer, permit.token, permit.amount);
      if (refusal !== undefined) return refusal;
      if (!isMalformed(sponsored)) {
        if (sponsored.deadline <= now + DEADLINE_MARGIN_SECONDS)
          return refuse('eip2612_deadline_expired', 'the EIP-2612 permit has expired (deadline)', payer);
        if (allowance < permit.amount && !(await eip2612PermitUsable(this.client, sponsored))) {
          return refuse(
            'permit2_allowance_required',
            `the payer has not approved Permit2 (${PERMIT2_ADDRESS}) for ${permit.amount} of ${permit.token}, and its EIP-2612 permit cannot approve it: not signed by ${payer} under the token's domain, or its nonce ${sponsored.nonce} is not the owner's current one`,
            payer,
          );
        }
      }
    } else if (allowance < permit.amount && permit.erc20Approval !== undefined) {
      // x402's erc20ApprovalGasSponsoring: checked and simulated with the settlement of the maximum.
      if (balance < permit.amount)
        return refuse('permit2_insufficient_balance', 'the payer holds less than the signed maximum', payer);
      const plan = await planSponsoredApproval(
        this.sponsoringContext(),
        uptoApprovalRequest(permit, permit.amount),
        permit.token,
      );
      return 'valid' in plan ? plan : { valid: true, payer, decimals };
    } else if (allowance < permit.amount) {
      return refuse(
        'permit2_allowance_required',
        `the payer has not approved Permit2 (${PERMIT2_ADDRESS}) for at least ${permit.amount} of ${permit.token}: approve it once, then pay again`,
        payer,
      );
    }
    if (balance < permit.amount) {
      return refuse('permit2_insufficient_balance', 'the payer holds less than the signed maximum', payer);
    }
    const call = uptoSettleCall(permit, permit.amount);
    const gas = await this.client
      .estimateGas({ account: getAddress(this.feePayer.address), to: call.to, data: call.data })
      .catch((error: unknown) =>
        error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error),
      );
    if (typeof gas === 'string')
      return refuse('permit2_simulation_failed', `the transfer would fail: ${gas}`, payer);
    if (gas > EVM_MAX_SETTLEMENT_GAS) {
      return refuse(
        'invalid_payload',
        `the transfer needs ${gas} gas, more than ${EVM_MAX_SETTLEMENT_GAS}`,
        payer,
      );
    }
    return { valid: true, payer, decimals };
  }

  /** The proxy's `settle` of `req.amount` (the actual amount), estimated and priced now; signed by the draft. */
  async prepare(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<SettlementDraft> {
    const permit = uptoPermitOf(payload);
    if (permit === undefined) throw new Error('prepare() called on a payload that was not verified');
    if (req.amount < 1n || req.amount > permit.amount) {
      throw new Error(`prepare() called with ${req.amount}, outside 1..${permit.amount}`);
    }
    const account = privateKeyToAccount(`0x${Buffer.from(this.feePayer.secretKey).toString('hex')}`);
    const { to, data } = uptoSettleCall(permit, req.amount);
    // erc20ApprovalGasSponsoring: the settlement can only be simulated after the buyer's approval.
    const plan = await sponsoredApprovalPlanNow(
      this.sponsoringContext(),
      uptoApprovalRequest(permit, req.amount),
      permit.token,
    );
    return evmSettlementDraft(
      { client: this.client, account, chainId: this.chainId, network: this.network },
      { payer: permit.from, to, data },
      plan,
    );
  }

  /**
   * The settlement whose own transaction was not mined, or reverted: the transaction that spent its
   * permit's nonce through the upto proxy moving the same amount to the same recipient (only this
   * facilitator's key can send one: another instance's, or the same bytes), `never` once a block past
   * the deadline exists and none did.
   */
  async findSettled(signed: Uint8Array, claimedAt: number): Promise<LandedPayment | 'never' | undefined> {
    const { to, data } = callOf(signed);
    const settle = uptoSettleCallOf(to, data);
    if (settle === undefined) return 'never';
    return this.findCarrier(settle, () => this.firstBlockSince(claimedAt));
  }

  async findPaid(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
    since: number,
  ): Promise<(LandedPayment & { readonly payer: string }) | undefined> {
    const permit = uptoPermitOf(payload);
    if (permit === undefined || req.amount < 1n || req.amount > permit.amount) return undefined;
    const settle: UptoSettleCall = {
      owner: permit.from,
      token: permit.token,
      nonce: permit.nonce,
      deadline: permit.deadline,
      to: permit.to,
      amount: req.amount,
    };
    const found = await this.findCarrier(settle, () => this.firstBlockSince(since));
    return found === 'never' || found === undefined ? undefined : { ...found, payer: permit.from };
  }

  private async findCarrier(
    settle: UptoSettleCall,
    fromBlock: () => Promise<bigint>,
  ): Promise<LandedPayment | 'never' | undefined> {
    let found: LandedPayment | 'never' | undefined;
    try {
      found = await this.searchCarrier(settle, fromBlock);
    } catch (error) {
      throw toChainError(error);
    }
    const durability = this.durability;
    if (durability === undefined) return found;
    try {
      if (typeof found !== 'object') await durability.sync();
      // Its block rewound after the search: not landed (a later look finds it wherever it is now).
      else if (!(await durability.syncThrough(found.slot))) return undefined;
    } catch (error) {
      throw toChainError(error);
    }
    return found;
  }

  /**
   * Permit2 emits nothing naming the nonce it spends, so a carrier is found by the token's Transfer
   * (owner → recipient, the amount) and recognised by its calldata: a call of the upto proxy for this
   * owner, nonce and token. Read the nonce before the latest block: a block past the deadline seen after
   * an unspent nonce means unspent for good.
   */
  private async searchCarrier(
    settle: UptoSettleCall,
    fromBlock: () => Promise<bigint>,
  ): Promise<LandedPayment | 'never' | undefined> {
    const wasSpent = await this.nonceSpent(settle.owner, settle.nonce);
    const latest = await this.client.getBlock({ blockTag: 'latest' });
    const pastDeadline = latest.timestamp > settle.deadline;
    if (!wasSpent) {
      if (!pastDeadline) return undefined;
      return (await this.nonceSpent(settle.owner, settle.nonce)) ? undefined : 'never';
    }
    const logs = await this.client.getLogs({
      address: settle.token,
      event: READS_ABI[4],
      args: { from: settle.owner, to: settle.to },
      fromBlock: await fromBlock(),
      toBlock: 'latest',
    });
    const looked = new Set<Hash>();
    for (const log of logs) {
      const hash = log.transactionHash;
      if (log.args.value !== settle.amount || hash == null || looked.has(hash)) continue;
      looked.add(hash);
      const carrier = await this.client.getTransaction({ hash });
      const call = uptoSettleCallOf(carrier.to, carrier.input);
      if (
        call === undefined ||
        call.owner !== settle.owner ||
        call.nonce !== settle.nonce ||
        call.token !== settle.token ||
        call.to !== settle.to ||
        call.amount !== settle.amount
      ) {
        continue;
      }
      const receipt = await this.client.getTransactionReceipt({ hash });
      return {
        transactionId: receipt.transactionHash,
        slot: receipt.blockNumber,
        // Found by its Transfer event, which is only in the logs of a transaction that succeeded.
        error: null,
        fee: receipt.gasUsed * receipt.effectiveGasPrice,
      };
    }
    return pastDeadline ? 'never' : undefined;
  }

  private async nonceSpent(owner: Address, nonce: bigint): Promise<boolean> {
    // Permit2 keeps unordered nonces as bits: word nonce >> 8, bit nonce & 0xff.
    const bitmap = await this.client.readContract({
      address: PERMIT2_ADDRESS,
      abi: READS_ABI,
      functionName: 'nonceBitmap',
      args: [owner, nonce >> 8n],
    });
    return ((bitmap >> (nonce & 0xffn)) & 1n) === 1n;
  }

  private async deployed(): Promise<boolean> {
    const [permit2, proxy] = await this.call(() =>
      Promise.all([
        this.client.getCode({ address: PERMIT2_ADDRESS }),
        this.client.getCode({ address: UPTO_PERMIT2_PROXY_ADDRESS }),
      ]),
    );
    return permit2 !== undefined && permit2 !== '0x' && proxy !== undefined && proxy !== '0x';
  }

  private sponsoringContext() {
    return {
      client: this.client,
      chainId: this.chainId,
      feePayer: getAddress(this.feePayer.address),
      maxGas: EVM_MAX_SETTLEMENT_GAS,
    };
  }

  private firstBlockSince(at: number): Promise<bigint> {
    const since = BigInt(Math.floor(at / 1000)) - CLAIM_CLOCK_MARGIN_SECONDS;
    return firstBlockSince(this.client, since > 0n ? since : 0n);
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toChainError(error);
    }
  }
}

/** The payload's `upto` permit, decoded; undefined when it is not one. */
export function uptoPermitOf(payload: Readonly<Record<string, unknown>>): UptoPermit | undefined {
  const { signature, permit2Authorization } = payload;
  const a = record(permit2Authorization);
  const permitted = record(a?.permitted);
  const witness = record(a?.witness);
  if (!isHex(signature) || a === undefined || permitted === undefined || witness === undefined)
    return undefined;
  const address = (v: unknown) => (typeof v === 'string' && isAddress(v) ? getAddress(v) : undefined);
  const integer = (v: unknown) => (typeof v === 'string' && /^\d{1,78}$/.test(v) ? BigInt(v) : undefined);
  const from = address(a.from);
  const token = address(permitted.token);
  const spender = address(a.spender);
  const to = address(witness.to);
  const facilitator = address(witness.facilitator);
  const amount = integer(permitted.amount);
  const nonce = integer(a.nonce);
  const deadline = integer(a.deadline);
  const validAfter = integer(witness.validAfter);
  if (
    from === undefined ||
    token === undefined ||
    spender === undefined ||
    to === undefined ||
    facilitator === undefined ||
    amount === undefined ||
    nonce === undefined ||
    deadline === undefined ||
    validAfter === undefined ||
    [amount, nonce, deadline, validAfter].some((n) => n >= 2n ** 256n)
  ) {
    return undefined;
  }
  const eip2612 = eip2612PermitOf(payload);
  const erc20Approval = erc20ApprovalOf(payload);
  return {
    from,
    token,
    amount,
    spender,
    nonce,
    deadline,
    to,
    facilitator,
    validAfter,
    signature,
    ...(eip2612 === undefined ? {} : { eip2612 }),
    ...(erc20Approval === undefined ? {} : { erc20Approval }),
  };
}

/** The buyer approval of an upto permit, for a settlement of `amount` (the approval covers the maximum). */
function uptoApprovalRequest(permit: UptoPermit, amount: bigint): SponsoredApprovalRequest {
  return {
    payer: permit.from,
    amount: permit.amount,
    approval: permit.erc20Approval,
    eip2612: permit.eip2612,
    settle: uptoSettleCall(permit, amount),
  };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
