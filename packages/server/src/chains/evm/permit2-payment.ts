import {
  type Address,
  encodeFunctionData,
  getAddress,
  type Hex,
  isAddress,
  isHex,
  type PublicClient,
  parseAbi,
} from 'viem';
import { type ExactRefusal, type ExactRequirements, refuse } from '../exact-scheme.ts';
import {
  checkEip2612Terms,
  EIP2612_GAS_SPONSORING,
  type Eip2612Permit,
  ERC20_APPROVAL_GAS_SPONSORING,
  eip2612PermitOf,
  eip2612PermitUsable,
  isMalformed,
  type MalformedSponsoring,
} from './eip2612-gas-sponsoring.ts';
import {
  type Erc20Approval,
  erc20ApprovalOf,
  planSponsoredApproval,
  type SponsoredApprovalRequest,
} from './erc20-approval-gas-sponsoring.ts';
import { toChainError } from './evm-errors.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from './permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from './permit2-proxy-abi.ts';

/**
 * x402 `exact` on EVM with Permit2 (`extra.assetTransferMethod: "permit2"`): the buyer approved Permit2
 * once for the token and signs a PermitWitnessTransferFrom whose spender is x402's proxy and whose
 * witness names the recipient; the facilitator submits the proxy's `settle` and pays the gas. Works for
 * any ERC-20, with or without EIP-3009. Payload:
 * `{signature, permit2Authorization:{from, permitted:{token, amount}, spender, nonce, deadline, witness:{to, validAfter}}}`.
 */
export interface Permit2Authorization {
  readonly from: Address;
  readonly token: Address;
  readonly amount: bigint;
  readonly spender: Address;
  /** Permit2's unordered nonce: one (owner, nonce) transfers once, whatever the spender. */
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly to: Address;
  readonly validAfter: bigint;
  readonly signature: Hex;
  /**
   * The buyer's EIP-2612 permit approving Permit2 (x402's `eip2612GasSponsoring` extension), when the
   * payload carries one: the facilitator then settles through the proxy's `settleWithPermit`.
   */
  readonly eip2612?: Eip2612Permit | MalformedSponsoring;
  /**
   * The buyer's signed `approve(Permit2)` transaction (x402's `erc20ApprovalGasSponsoring`), when the
   * payload carries one: the facilitator funds its gas and broadcasts it before settling, when the payer
   * has not approved Permit2 yet (erc20-approval-gas-sponsoring.ts).
   */
  readonly erc20Approval?: Erc20Approval | MalformedSponsoring;
}

/** The EIP-712 types x402 clients sign (PermitWitnessTransferFrom with x402's witness). */
const PERMIT_WITNESS_TRANSFER_FROM_TYPES = {
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
    { name: 'validAfter', type: 'uint256' },
  ],
} as const;

const PERMIT2_READS_ABI = parseAbi([
  'function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function balanceOf(address account) view returns (uint256)',
]);

/** A permit must stay valid this long after verification, so the settlement can still land. */
const DEADLINE_MARGIN_SECONDS = 6n;

/** True when the payload is shaped as a Permit2 payment (it may still fail to decode). */
export function isPermit2Payload(payload: Readonly<Record<string, unknown>>): boolean {
  return 'permit2Authorization' in payload;
}

export function permit2AuthorizationOf(
  payload: Readonly<Record<string, unknown>>,
): Permit2Authorization | undefined {
  const { signature, permit2Authorization } = payload;
  const a = record(permit2Authorization);
  const permitted = record(a?.permitted);
  const witness = record(a?.witness);
  if (!isHex(signature) || a === undefined || permitted === undefined || witness === undefined) {
    return undefined;
  }
  const address = (v: unknown) => (typeof v === 'string' && isAddress(v) ? getAddress(v) : undefined);
  const integer = (v: unknown) => (typeof v === 'string' && /^\d{1,78}$/.test(v) ? BigInt(v) : undefined);
  const from = address(a.from);
  const token = address(permitted.token);
  const spender = address(a.spender);
  const to = address(witness.to);
  const amount = integer(permitted.amount);
  const nonce = integer(a.nonce);
  const deadline = integer(a.deadline);
  const validAfter = integer(witness.validAfter);
  if (
    from === undefined ||
    token === undefined ||
    spender === undefined ||
    to === undefined ||
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
    validAfter,
    signature,
    ...(eip2612 === undefined ? {} : { eip2612 }),
    ...(erc20Approval === undefined ? {} : { erc20Approval }),
  };
}

/**
 * The proxy call that settles `auth`: the facilitator sends it and pays its gas. `settleWithPermit` when
 * the buyer signed an EIP-2612 permit for Permit2 (its approval and the transfer in one transaction),
 * `settle` otherwise.
 */
export function permit2SettleCall(auth: Permit2Authorization): { to: Address; data: Hex } {
  const settleArgs = [
    { permitted: { token: auth.token, amount: auth.amount }, nonce: auth.nonce, deadline: auth.deadline },
    auth.from,
    { to: auth.to, validAfter: auth.validAfter },
    auth.signature,
  ] as const;
  const permit = auth.eip2612;
  const data =
    permit === undefined || isMalformed(permit)
      ? encodeFunctionData({ abi: EXACT_PERMIT2_PROXY_ABI, functionName: 'settle', args: settleArgs })
      : encodeFunctionData({
          abi: EXACT_PERMIT2_PROXY_ABI,
          functionName: 'settleWithPermit',
          args: [
            { value: permit.value, deadline: permit.deadline, r: permit.r, s: permit.s, v: permit.v },
            ...settleArgs,
          ],
        });
  return { to: EXACT_PERMIT2_PROXY_ADDRESS, data };
}

/** What the facilitator funds and sends first for `auth`'s buyer approval (erc20ApprovalGasSponsoring). */
export function sponsoredApprovalRequest(auth: Permit2Authorization): SponsoredApprovalRequest {
  return {
    payer: auth.from,
    amount: auth.amount,
    approval: auth.erc20Approval,
    eip2612: auth.eip2612,
    settle: permit2SettleCall(auth),
  };
}

/** Whether a chain carries Permit2 and x402's proxy, so Permit2 payments can be settled there. */
export async function permit2Available(client: PublicClient): Promise<boolean> {
  const [permit2, proxy] = await Promise.all([
    client.getCode({ address: PERMIT2_ADDRESS }),
    client.getCode({ address: EXACT_PERMIT2_PROXY_ADDRESS }),
  ]).catch((error: unknown) => {
    throw toChainError(error);
  });
  return permit2 !== undefined && permit2 !== '0x' && proxy !== undefined && proxy !== '0x';
}

/**
 * What a permit pays, against the requirements (ExactScheme.checkTerms): the token, the spender (x402's
 * proxy), the witness's recipient and the amount, all signed by the buyer. Needs nothing from the chain.
 */
export function checkPermit2Terms(
  auth: Permit2Authorization,
  req: ExactRequirements,
): ExactRefusal | undefined {
  const payer = auth.from;
  const asset = isAddress(req.asset) ? getAddress(req.asset) : req.asset;
  if (auth.token !== asset) {
    return refuse('permit2_token_mismatch', `the permit is for token ${auth.token}, not ${asset}`, payer);
  }
  if (auth.spender !== EXACT_PERMIT2_PROXY_ADDRESS) {
    return refuse(
      'invalid_permit2_spender',
      `the permit's spender must be x402's exact Permit2 proxy ${EXACT_PERMIT2_PROXY_ADDRESS}, not ${auth.spender}`,
      payer,
    );
  }
  if (!isAddress(req.payTo) || auth.to !== getAddress(req.payTo)) {
    return refuse(
      'invalid_permit2_recipient_mismatch',
      `the permit's witness pays ${auth.to}, not ${req.payTo}`,
      payer,
    );
  }
  if (auth.amount !== req.amount) {
    return refuse('permit2_amount_mismatch', `the permit moves ${auth.amount}, not ${req.amount}`, payer);
  }
  return undefined;
}

/**
 * Every check of a Permit2 payment short of broadcasting, in the order x402's scheme text gives:
 * what was signed against the requirements (checkPermit2Terms), the validity window, the signature,
 * the nonce, the allowance to Permit2, the balance, then a simulation of the proxy call as the fee
 * payer would send it. Undefined when it passes.
 */
export async function checkPermit2Payment(
  context: {
    readonly client: PublicClient;
    readonly chainId: number;
    readonly feePayer: Address;
    readonly maxGas: bigint;
    readonly now: () => number;
    /**
     * Whether the submitter funds and broadcasts a buyer's signed approval (erc20ApprovalGasSponsoring):
     * the facilitator does; a seller's own wallet in local mode does not.
     */
    readonly sponsorsApprovals: boolean;
  },
  auth: Permit2Authorization,
  req: ExactRequirements,
): Promise<ExactRefusal | undefined> {
  const terms = checkPermit2Terms(auth, req);
  if (terms !== undefined) return terms;
  const payer = auth.from;
  const asset = getAddress(req.asset);
  const now = BigInt(Math.floor(context.now() / 1000));
  if (auth.validAfter > now) {
    return refuse('permit2_not_yet_valid', 'the permit is not valid yet (witness.validAfter)', payer);
  }
  if (auth.deadline <= now + DEADLINE_MARGIN_SECONDS) {
    return refuse('permit2_deadline_expired', 'the permit has expired (deadline)', payer);
  }
  const { client } = context;
  // viem checks EOA signatures locally and asks the chain for contract wallets (ERC-1271, ERC-6492).
  const signatureValid = await client
    .verifyTypedData({
      address: payer,
      domain: { name: 'Permit2', chainId: context.chainId, verifyingContract: PERMIT2_ADDRESS },
      types: PERMIT_WITNESS_TRANSFER_FROM_TYPES,
      primaryType: 'PermitWitnessTransferFrom',
      message: {
        permitted: { token: auth.token, amount: auth.amount },
        spender: auth.spender,
        nonce: auth.nonce,
        deadline: auth.deadline,
        witness: { to: auth.to, validAfter: auth.validAfter },
      },
      signature: auth.signature,
    })
    .catch(() => false);
  if (!signatureValid) {
    return refuse('invalid_permit2_signature', 'the permit signature does not verify', payer);
  }
  const [deployed, bitmap, allowance, balance] = await Promise.all([
    permit2Available(client),
    client.readContract({
      address: PERMIT2_ADDRESS,
      abi: PERMIT2_READS_ABI,
      functionName: 'nonceBitmap',
      args: [payer, auth.nonce >> 8n],
    }),
    client.readContract({
      address: asset,
      abi: PERMIT2_READS_ABI,
      functionName: 'allowance',
      args: [payer, PERMIT2_ADDRESS],
    }),
    client.readContract({ address: asset, abi: PERMIT2_READS_ABI, functionName: 'balanceOf', args: [payer] }),
  ]).catch((error: unknown) => {
    throw toChainError(error);
  });
  if (!deployed) {
    return refuse(
      'permit2_proxy_not_deployed',
      `this network has no Permit2 (${PERMIT2_ADDRESS}) or no x402 exact Permit2 proxy (${EXACT_PERMIT2_PROXY_ADDRESS})`,
      payer,
    );
  }
  // Permit2 keeps nonces as bits: word nonce >> 8, bit nonce & 0xff.
  if ((bitmap >> (auth.nonce & 0xffn)) & 1n) {
    return refuse('permit2_invalid_nonce', 'the permit was already used (its Permit2 nonce is spent)', payer);
  }
  // x402's eip2612GasSponsoring: the buyer's EIP-2612 permit approves Permit2 in the settlement itself.
  const sponsored = auth.eip2612;
  if (sponsored !== undefined) {
    const terms = checkEip2612Terms(sponsored, payer, asset, auth.amount);
    if (terms !== undefined) return terms;
  }
  if (sponsored !== undefined && !isMalformed(sponsored)) {
    if (sponsored.deadline <= now + DEADLINE_MARGIN_SECONDS) {
      return refuse('eip2612_deadline_expired', 'the EIP-2612 permit has expired (deadline)', payer);
    }
    // An allowance already there settles whatever becomes of the permit (the proxy ignores its failure).
    if (allowance < auth.amount && !(await eip2612PermitUsable(client, sponsored))) {
      return refuse(
        'permit2_allowance_required',
        `the payer has not approved Permit2 (${PERMIT2_ADDRESS}) for ${auth.amount} of ${asset}, and its EIP-2612 permit cannot approve it: not signed by ${payer} under the token's domain, or its nonce ${sponsored.nonce} is not the owner's current one (already used)`,
        payer,
      );
    }
  } else if (allowance < auth.amount && auth.erc20Approval !== undefined && context.sponsorsApprovals) {
    // x402's erc20ApprovalGasSponsoring: the buyer's own approval goes first, funded by the facilitator.
    if (balance < auth.amount)
      return refuse('permit2_insufficient_balance', 'the payer holds less than the amount', payer);
    const plan = await planSponsoredApproval(context, sponsoredApprovalRequest(auth), asset);
    return 'valid' in plan ? plan : undefined;
  } else if (allowance < auth.amount) {
    return refuse(
      'permit2_allowance_required',
      auth.erc20Approval !== undefined
        ? `the payer has not approved Permit2 (${PERMIT2_ADDRESS}) for at least ${auth.amount} of ${asset}, and the seller's own wallet, which settles in local mode, does not broadcast approval transactions (${ERC20_APPROVAL_GAS_SPONSORING}): approve it once, sign an EIP-2612 permit (${EIP2612_GAS_SPONSORING}), or pay through the facilitator`
        : `the payer has not approved Permit2 (${PERMIT2_ADDRESS}) for at least ${auth.amount} of ${asset}: approve it once, then pay again`,
      payer,
    );
  }
  if (balance < auth.amount)
    return refuse('permit2_insufficient_balance', 'the payer holds less than the amount', payer);
  // Estimating the gas runs the call as the fee payer would send it: a revert is a failed simulation.
  const call = permit2SettleCall(auth);
  const gas = await client
    .estimateGas({ account: context.feePayer, to: call.to, data: call.data })
    .catch((error: unknown) =>
      error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error),
    );
  if (typeof gas === 'string') {
    return refuse('permit2_simulation_failed', `the transfer would fail: ${gas}`, payer);
  }
  if (gas > context.maxGas) {
    return refuse('invalid_payload', `the transfer needs ${gas} gas, more than ${context.maxGas}`, payer);
  }
  return undefined;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
