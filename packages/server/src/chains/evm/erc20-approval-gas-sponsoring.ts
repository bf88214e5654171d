import {
  type Address,
  decodeFunctionData,
  encodeFunctionData,
  getAddress,
  type Hex,
  isHex,
  keccak256,
  type PublicClient,
  parseAbi,
  parseTransaction,
  recoverTransactionAddress,
  type TransactionSerializedEIP1559,
} from 'viem';
import { type ExactRefusal, refuse } from '../exact-scheme.ts';
import {
  ERC20_APPROVAL_GAS_SPONSORING,
  type MalformedSponsoring,
  SPONSORING_FIELD,
} from './eip2612-gas-sponsoring.ts';
import { toChainError } from './evm-errors.ts';
import { PERMIT2_ADDRESS } from './permit2-addresses.ts';

/**
 * x402's `erc20ApprovalGasSponsoring` extension (exact and upto on EVM with Permit2): a buyer who never
 * approved Permit2 for a token without EIP-2612 signs, beside its Permit2 permit, an ordinary
 * `approve(Permit2, amount)` transaction of its own; the facilitator funds that transaction's gas (the
 * buyer may hold no native currency), broadcasts it, then settles the permit as usual. The payload
 * carries it as `extensions.erc20ApprovalGasSponsoring.info`:
 * `{from, asset, spender, amount, signedTransaction, version}` (stock clients approve 2^256 − 1 with a
 * 70,000 gas EIP-1559 transaction at the network's fee estimate).
 *
 * The facilitator pays for whatever that transaction costs, so it is checked before anything is spent:
 * an EIP-1559 transaction of this chain, signed by the payer, with the payer's current nonce, calling
 * exactly `approve(Permit2, ≥ the permitted amount)` on the payment's token with no value, its gas limit
 * and fee within the caps below. A hostile buyer can then make the facilitator fund at most one such
 * approval per payment (per buyer nonce), charged to the seller's fee budget.
 */
export interface Erc20Approval {
  readonly from: Address;
  readonly asset: Address;
  readonly spender: Address;
  readonly signedTransaction: Hex;
}

/** The buyer's approval transaction, decoded and found to be what the facilitator may fund. */
export interface SponsorableApproval {
  readonly signer: Address;
  readonly token: Address;
  readonly transactionId: Hex;
  readonly wire: Hex;
  readonly nonce: bigint;
  readonly gas: bigint;
  readonly maxFeePerGas: bigint;
  readonly maxPriorityFeePerGas: bigint;
  /** The calldata, to simulate it as the buyer. */
  readonly data: Hex;
  /** What the buyer's balance must hold for the node to take it: gas limit × max fee per gas. */
  readonly maxCost: bigint;
}

/**
 * The most gas an approval may ask for: the stock client signs 70,000; an ERC-20 `approve` needs about
 * 46,000 (a token behind a proxy somewhat more).
 */
export const MAX_APPROVAL_GAS = 100_000n;

/**
 * The most an approval may bid per gas unit, as a multiple of the network's own estimate now (the stock
 * client signs at that estimate): a buyer cannot have its gas bought at any price.
 */
export const MAX_APPROVAL_FEE_MULTIPLE = 3n;

/**
 * The least an approval's priority fee may be, as a fraction (1 / this) of the network's suggestion now
 * (the stock client signs the suggestion). With its max fee at least the next block's highest possible
 * base fee (the latest one + 1/8, EIP-1559), a node mines it within a few blocks: an approval no node
 * will mine would hold the settlement's fee-payer nonce, and with it every later settlement of every
 * account on the network, for APPROVAL_PATIENCE_MS.
 */
export const MIN_APPROVAL_TIP_DIVISOR = 2n;

const APPROVE_ABI = parseAbi(['function approve(address spender, uint256 amount) returns (bool)']);

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The approval a payload carries; undefined when none, `{malformed}` when not in x402's shape. */
export function erc20ApprovalOf(
  payload: Readonly<Record<string, unknown>>,
): Erc20Approval | MalformedSponsoring | undefined {
  const extension = record(record(payload[SPONSORING_FIELD])?.[ERC20_APPROVAL_GAS_SPONSORING]);
  if (extension === undefined) return undefined;
  const info = record(extension.info);
  const text = (key: string, pattern: RegExp) => {
    const value = info?.[key];
    return typeof value === 'string' && pattern.test(value) ? value : undefined;
  };
  const [from, asset, spender] = [text('from', ADDRESS), text('asset', ADDRESS), text('spender', ADDRESS)];
  const signed = text('signedTransaction', /^0x[0-9a-fA-F]{2,4096}$/);
  if (
    from === undefined ||
    asset === undefined ||
    spender === undefined ||
    signed === undefined ||
    text('amount', /^\d{1,78}$/) === undefined ||
    text('version', /^\d{1,9}(\.\d{1,9}){0,3}$/) === undefined ||
    !isHex(signed)
  ) {
    return {
      malformed: `${ERC20_APPROVAL_GAS_SPONSORING}.info needs from, asset, spender (addresses), amount (a decimal string), signedTransaction (hex) and version`,
    };
  }
  return {
    from: getAddress(from),
    asset: getAddress(asset),
    spender: getAddress(spender),
    signedTransaction: signed,
  };
}

/**
 * What the approval is, from the payload alone, in the stock facilitator's order and under its reason
 * names: the extension's fields (payer, token, Permit2), then the signed transaction — the token as its
 * target, exactly `approve(Permit2, amount ≥ required)` with no value, signed by the payer for this
 * chain, as EIP-1559 with a gas limit within MAX_APPROVAL_GAS.
 */
export async function checkErc20Approval(
  approval: Erc20Approval | MalformedSponsoring,
  payer: Address,
  token: Address,
  required: bigint,
  chainId: number,
): Promise<ExactRefusal | SponsorableApproval> {
  if ('malformed' in approval)
    return refuse('invalid_erc20_approval_extension_format', approval.malformed, payer);
  if (approval.from !== payer) {
    return refuse(
      'erc20_approval_from_mismatch',
      `the approval is signed for ${approval.from}, not the payer ${payer}`,
      payer,
    );
  }
  if (approval.asset !== token)
    return refuse(
      'erc20_approval_asset_mismatch',
      `the approval is for ${approval.asset}, not ${token}`,
      payer,
    );
  if (approval.spender !== PERMIT2_ADDRESS) {
    return refuse(
      'erc20_approval_spender_not_permit2',
      `the approval names ${approval.spender} as spender, not Permit2 (${PERMIT2_ADDRESS})`,
      payer,
    );
  }
  let tx: ReturnType<typeof parseTransaction>;
  try {
    tx = parseTransaction(approval.signedTransaction);
  } catch {
    return refuse('erc20_approval_tx_parse_failed', 'the signed approval transaction does not decode', payer);
  }
  if (tx.type !== 'eip1559') {
    return refuse(
      'erc20_approval_tx_parse_failed',
      `the approval must be an EIP-1559 transaction, not ${tx.type ?? 'unknown'}`,
      payer,
    );
  }
  if (tx.to == null || getAddress(tx.to) !== token) {
    return refuse(
      'erc20_approval_tx_wrong_target',
      `the approval transaction calls ${tx.to ?? 'nothing (a deployment)'}, not the token ${token}`,
      payer,
    );
  }
  const data = tx.data ?? '0x';
  let approved: bigint;
  try {
    const call = decodeFunctionData({ abi: APPROVE_ABI, data });
    if (getAddress(call.args[0]) !== PERMIT2_ADDRESS) {
      return refuse(
        'erc20_approval_tx_wrong_spender',
        `the approval transaction approves ${call.args[0]}, not Permit2 (${PERMIT2_ADDRESS})`,
        payer,
      );
    }
    approved = call.args[1];
  } catch {
    return refuse(
      data.slice(0, 10) === '0x095ea7b3'
        ? 'erc20_approval_tx_invalid_calldata'
        : 'erc20_approval_tx_wrong_selector',
      'the approval transaction does not call approve(address,uint256)',
      payer,
    );
  }
  // Exactly the call, nothing appended: the calldata is re-encoded from what it decodes to.
  if (data.toLowerCase() !== encodeFunctionData({ abi: APPROVE_ABI, args: [PERMIT2_ADDRESS, approved] })) {
    return refuse(
      'erc20_approval_tx_invalid_calldata',
      'the approval calldata carries more than approve()',
      payer,
    );
  }
  if (approved < required) {
    return refuse(
      'erc20_approval_tx_invalid_calldata',
      `the approval transaction approves ${approved}, less than the ${required} the permit moves`,
      payer,
    );
  }
  if ((tx.value ?? 0n) !== 0n || (tx.accessList?.length ?? 0) > 0) {
    return refuse(
      'erc20_approval_tx_invalid_calldata',
      'the approval transaction sends value or an access list: it must be the bare approve() call',
      payer,
    );
  }
  if (tx.chainId !== chainId) {
    return refuse(
      'erc20_approval_tx_invalid_signature',
      `the approval transaction is signed for chain ${tx.chainId}, not ${chainId}`,
      payer,
    );
  }
  let signer: Address;
  try {
    signer = getAddress(
      await recoverTransactionAddress({
        serializedTransaction: approval.signedTransaction as TransactionSerializedEIP1559,
      }),
    );
  } catch {
    return refuse(
      'erc20_approval_tx_invalid_signature',
      'the approval transaction signature does not recover',
      payer,
    );
  }
  if (signer !== payer) {
    return refuse(
      'erc20_approval_tx_signer_mismatch',
      `the approval transaction is signed by ${signer}, not the payer ${payer}`,
      payer,
    );
  }
  const gas = tx.gas ?? 0n;
  const maxFeePerGas = tx.maxFeePerGas ?? 0n;
  if (gas > MAX_APPROVAL_GAS) {
    return refuse(
      'erc20_approval_tx_gas_too_high',
      `the approval transaction asks for ${gas} gas, more than the ${MAX_APPROVAL_GAS} this facilitator funds`,
      payer,
    );
  }
  return {
    signer,
    token,
    transactionId: keccak256(approval.signedTransaction),
    wire: approval.signedTransaction,
    nonce: BigInt(tx.nonce ?? 0),
    gas,
    maxFeePerGas,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? 0n,
    data,
    maxCost: gas * maxFeePerGas,
  };
}

/**
 * What the approval needs from the chain now: the payer's current nonce (nothing of the payer's
 * pending before it, and not already used) and a fee per gas within MAX_APPROVAL_FEE_MULTIPLE of the
 * network's estimate, yet one a node mines now: a max fee at least the next block's highest possible
 * base fee and a priority fee at least 1 / MIN_APPROVAL_TIP_DIVISOR of the network's suggestion
 * (`erc20_approval_tx_fee_too_low`; an approval bidding 0 needs no funding, so no funding cap sees it,
 * yet it would hold the fee payer's next nonce). Returns the shortfall the facilitator funds: what the payer's balance lacks for
 * the approval's gas limit at its max fee (0 when it holds enough).
 */
export async function approvalShortfallNow(
  client: PublicClient,
  approval: SponsorableApproval,
): Promise<ExactRefusal | { readonly shortfall: bigint }> {
  const [latest, pending, balance, fees, block, code] = await Promise.all([
    client.getTransactionCount({ address: approval.signer, blockTag: 'latest' }),
    client.getTransactionCount({ address: approval.signer, blockTag: 'pending' }),
    client.getBalance({ address: approval.signer }),
    client.estimateFeesPerGas(),
    client.getBlock({ blockTag: 'latest' }),
    client.getCode({ address: approval.signer }),
  ]).catch((error: unknown) => {
    throw toChainError(error);
  });
  if (BigInt(latest) !== approval.nonce || BigInt(pending) !== approval.nonce) {
    return refuse(
      'erc20_approval_tx_nonce_mismatch',
      `the approval transaction has nonce ${approval.nonce}, the payer's current one is ${pending}: used already, or another of its transactions is in the way`,
      approval.signer,
    );
  }
  // An account with code (an EIP-7702 delegation) can have its ETH moved by a call, without its nonce:
  // the approval, once in the pool, could be left unable to pay for itself, never mined, and hold the
  // settlement's fee-payer nonce. Such a payer approves Permit2 with its own gas.
  if (code !== undefined && code !== '0x') {
    return refuse(
      'erc20_approval_sponsoring_refused',
      `the payer ${approval.signer} carries code (an EIP-7702 delegation or a contract): its balance can move without its nonce, so its approval's gas is not sponsored; approve Permit2 with its own gas`,
      approval.signer,
    );
  }
  const cap = fees.maxFeePerGas * MAX_APPROVAL_FEE_MULTIPLE;
  if (approval.maxFeePerGas > cap) {
    return refuse(
      'erc20_approval_tx_fee_too_high',
      `the approval transaction bids ${approval.maxFeePerGas} wei per gas, more than the ${cap} this facilitator funds now (${MAX_APPROVAL_FEE_MULTIPLE} × the network's estimate)`,
      approval.signer,
    );
  }
  // The next block's base fee is at most 1/8 above the latest one's (EIP-1559); a chain without a base
  // fee (pre-London) has none to meet.
  const baseFee = block.baseFeePerGas ?? 0n;
  const floor = baseFee + baseFee / 8n;
  if (approval.maxFeePerGas < floor) {
    return refuse(
      'erc20_approval_tx_fee_too_low',
      `the approval transaction bids at most ${approval.maxFeePerGas} wei per gas, under the ${floor} the next block may ask (its base fee ${baseFee} + 1/8): no node would mine it now, sign it at the network's fee estimate`,
      approval.signer,
    );
  }
  const tipFloor = fees.maxPriorityFeePerGas / MIN_APPROVAL_TIP_DIVISOR;
  if (approval.maxPriorityFeePerGas < tipFloor) {
    return refuse(
      'erc20_approval_tx_fee_too_low',
      `the approval transaction tips ${approval.maxPriorityFeePerGas} wei per gas, under the ${tipFloor} this facilitator asks now (1/${MIN_APPROVAL_TIP_DIVISOR} of the network's suggestion ${fees.maxPriorityFeePerGas}): sign it at the network's fee estimate`,
      approval.signer,
    );
  }
  return { shortfall: approval.maxCost > balance ? approval.maxCost - balance : 0n };
}

/**
 * Runs, without sending anything, the buyer's approval and then `settle` as the fee payer sends it, in
 * one simulated block (eth_simulateV1, fees not checked): the settlement's gas use, or why it fails.
 */
export async function simulateApproveThenSettle(
  client: PublicClient,
  approval: SponsorableApproval,
  feePayer: Address,
  settle: { readonly to: Address; readonly data: Hex },
): Promise<{ readonly gasUsed: bigint; readonly approvalGasUsed: bigint } | { readonly error: string }> {
  type Result = { status: Hex; gasUsed: Hex; error?: { message?: string } };
  let blocks: { calls: Result[] }[];
  try {
    blocks = (await client.request({
      method: 'eth_simulateV1',
      params: [
        {
          blockStateCalls: [
            {
              calls: [
                { from: approval.signer, to: approval.token, data: approval.data },
                { from: feePayer, to: settle.to, data: settle.data },
              ],
            },
          ],
          validation: false,
        },
        'latest',
      ],
    } as never)) as { calls: Result[] }[];
  } catch (error) {
    const message = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
    return {
      error: `the network could not simulate the approval and the transfer (eth_simulateV1): ${message}`,
    };
  }
  const [approve, transfer] = blocks[0]?.calls ?? [];
  if (approve === undefined || transfer === undefined) return { error: 'the simulation answered no calls' };
  if (approve.status !== '0x1')
    return { error: `the approval would fail: ${approve.error?.message ?? 'reverted'}` };
  if (transfer.status !== '0x1')
    return { error: `the transfer would fail after the approval: ${transfer.error?.message ?? 'reverted'}` };
  return { gasUsed: BigInt(transfer.gasUsed), approvalGasUsed: BigInt(approve.gasUsed) };
}

/**
 * Whether a buyer approval not mined can still land: not once the buyer's nonce moved past it (another
 * transaction of the buyer's took that nonce).
 */
export async function approvalSuperseded(client: PublicClient, wire: Hex): Promise<boolean> {
  const tx = parseTransaction(wire);
  const signer = await recoverTransactionAddress({
    serializedTransaction: wire as TransactionSerializedEIP1559,
  });
  const latest = await client
    .getTransactionCount({ address: signer, blockTag: 'latest' })
    .catch((error: unknown) => {
      throw toChainError(error);
    });
  return BigInt(latest) > BigInt(tx.nonce ?? 0);
}

/**
 * Whether the approval took effect: its signer's allowance to Permit2 for its token (the transaction's
 * target, checked as the payment's token before it was funded) is at least `amount` now. Read before
 * the settlement is sent: a buyer who replaced its funded approval (same nonce) or took the allowance
 * back would have the settlement revert at the fee payer's cost.
 *
 * `minedIn`: the block the approval was seen mined in. The allowance is read at the answering node's
 * head block, and only once that head is at or past it: a node lagging behind the one that saw the
 * approval mined would show no allowance yet, and void an honest buyer's settlement. Throws then (as on
 * any failed read), which decides nothing; a node asked for a block it does not hold errors too.
 */
export async function approvalCovers(
  client: PublicClient,
  wire: Hex,
  amount: bigint,
  minedIn?: bigint,
): Promise<boolean> {
  const tx = parseTransaction(wire);
  if (tx.to == null) return false;
  const signer = await recoverTransactionAddress({
    serializedTransaction: wire as TransactionSerializedEIP1559,
  });
  const head = await client.getBlockNumber({ cacheTime: 0 }).catch((error: unknown) => {
    throw toChainError(error);
  });
  if (minedIn !== undefined && head < minedIn) {
    throw new Error(`the node's head block ${head} is behind the approval's block ${minedIn}`);
  }
  return (await permit2Allowance(client, getAddress(tx.to), getAddress(signer), head)) >= amount;
}

/** A settlement whose payer may need its approval funded and sent first. */
export interface SponsoredApprovalRequest {
  readonly payer: Address;
  /** What the settlement moves at most (upto: the signed maximum): the approval must cover it. */
  readonly amount: bigint;
  readonly approval: Erc20Approval | MalformedSponsoring | undefined;
  /** The payload's EIP-2612 permit, if any: it approves Permit2 itself, so no approval is funded. */
  readonly eip2612: unknown;
  /** The settlement's call as the fee payer sends it, simulated after the approval. */
  readonly settle: { readonly to: Address; readonly data: Hex };
}

/** A buyer approval the facilitator may fund and broadcast before the settlement, and what that takes. */
export interface SponsoredApprovalPlan {
  readonly approval: SponsorableApproval;
  /** What the facilitator gives the buyer for the approval's gas (0 when it holds enough). */
  readonly shortfall: bigint;
  /** The settlement's gas use after the approval, simulated. */
  readonly settleGas: bigint;
}

/**
 * The buyer's approval checked before anything is spent — what it is (checkErc20Approval), the payer's
 * nonce and the fee it bids now (approvalShortfallNow) — then the approval and the settlement simulated
 * together as they would be sent; the settlement's gas within `maxGas`. For a payer who has not approved
 * Permit2; call after the permit's own checks.
 */
export async function planSponsoredApproval(
  context: {
    readonly client: PublicClient;
    readonly chainId: number;
    readonly feePayer: Address;
    readonly maxGas: bigint;
  },
  request: SponsoredApprovalRequest,
  asset: Address,
): Promise<ExactRefusal | SponsoredApprovalPlan> {
  const { payer } = request;
  if (request.approval === undefined)
    return refuse('permit2_allowance_required', 'the payload carries no approval', payer);
  const approval = await checkErc20Approval(request.approval, payer, asset, request.amount, context.chainId);
  if ('valid' in approval) return approval;
  const now = await approvalShortfallNow(context.client, approval);
  if ('valid' in now) return now;
  const simulated = await simulateApproveThenSettle(
    context.client,
    approval,
    context.feePayer,
    request.settle,
  );
  if ('error' in simulated) return refuse('permit2_simulation_failed', simulated.error, payer);
  // Under what it uses the approval would run out of gas (or, under the intrinsic 21,000 + calldata,
  // never be taken by a node): the settlement after it could only be voided.
  if (approval.gas < simulated.approvalGasUsed) {
    return refuse(
      'erc20_approval_tx_gas_too_low',
      `the approval transaction gives ${approval.gas} gas, less than the ${simulated.approvalGasUsed} it uses`,
      payer,
    );
  }
  if (simulated.gasUsed > context.maxGas) {
    return refuse(
      'invalid_payload',
      `the transfer needs ${simulated.gasUsed} gas, more than ${context.maxGas}`,
      payer,
    );
  }
  return { approval, shortfall: now.shortfall, settleGas: simulated.gasUsed };
}

/** The owner's allowance to Permit2 for `token` now (at the latest block, or at `blockNumber`). */
export async function permit2Allowance(
  client: PublicClient,
  token: Address,
  owner: Address,
  blockNumber?: bigint,
): Promise<bigint> {
  return client
    .readContract({
      address: token,
      abi: ALLOWANCE_ABI,
      functionName: 'allowance',
      args: [owner, PERMIT2_ADDRESS],
      ...(blockNumber === undefined ? {} : { blockNumber }),
    })
    .catch((error: unknown) => {
      throw toChainError(error);
    });
}

const ALLOWANCE_ABI = parseAbi(['function allowance(address owner, address spender) view returns (uint256)']);

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
