import {
  type Address,
  createPublicClient,
  encodeFunctionData,
  getAddress,
  type Hex,
  isAddress,
  isHex,
  type PublicClient,
  parseAbi,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { ChainError } from '../chain-error.ts';
import {
  type ExactRefusal,
  type ExactRequirements,
  type ExactScheme,
  type ExactVerdict,
  type LandedPayment,
  refuse,
  type SellerTransaction,
  type SettlementDraft,
} from '../exact-scheme.ts';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import type { ChainDurability } from './chain-durability.ts';
import { EIP2612_GAS_SPONSORING, ERC20_APPROVAL_GAS_SPONSORING } from './eip2612-gas-sponsoring.ts';
import { approvalCovers, approvalSuperseded } from './erc20-approval-gas-sponsoring.ts';
import { toChainError } from './evm-errors.ts';
import { evmSettlementDraft } from './evm-settlement-draft.ts';
import { failoverTransport } from './failover-transport.ts';
import { firstBlockSince } from './first-block-since.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS } from './permit2-addresses.ts';
import {
  checkPermit2Payment,
  checkPermit2Terms,
  isPermit2Payload,
  type Permit2Authorization,
  permit2AuthorizationOf,
  permit2Available,
  permit2SettleCall,
  sponsoredApprovalRequest,
} from './permit2-payment.ts';
import {
  type ContractCall,
  callOf,
  findLandedAuthorization,
  LOCAL_VALIDITY_BLOCKS,
  sellerAuthorizationTransaction,
} from './seller-paid-authorization.ts';
import { findLandedPermit2 } from './seller-paid-permit2.ts';
import { sponsoredApprovalPlanNow } from './sponsored-approval-draft.ts';

const EIP3009_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
  'function decimals() view returns (uint8)',
]);

const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

/**
 * The most gas a settlement may take: the fee payer pays it. Circle's USDC and the embedded USDC-like
 * token need about 80,000 for transferWithAuthorization; a token that needs much more is not one to
 * pay gas for.
 */
export const EVM_MAX_SETTLEMENT_GAS = 200_000n;

/** An authorization must stay valid this long after verification, so the settlement can still land. */
const VALID_BEFORE_MARGIN_SECONDS = 6n;

/** How far before a settlement's claim (by this process's clock) its carrier is looked for on chain. */
const CLAIM_CLOCK_MARGIN_SECONDS = 600n;

export interface EvmFeePayer {
  readonly address: string;
  /** The 32-byte secp256k1 secret. */
  readonly secretKey: Uint8Array;
}

interface Authorization {
  readonly from: Address;
  readonly to: Address;
  readonly value: bigint;
  readonly validAfter: bigint;
  readonly validBefore: bigint;
  readonly nonce: Hex;
  readonly signature: Hex;
}

/** The ways x402 `exact` moves an EVM token (`extra.assetTransferMethod`); absent means either. */
type AssetTransferMethod = 'eip3009' | 'permit2';

/** A payload decoded as the transfer its buyer signed, by either method. */
type SignedTransfer =
  | { readonly method: 'eip3009'; readonly auth: Authorization }
  | { readonly method: 'permit2'; readonly permit: Permit2Authorization };

/**
 * x402 `exact` on EVM: the facilitator submits the buyer's signed transfer and pays the gas, either an
 * EIP-3009 transferWithAuthorization on the token or, for any ERC-20 the buyer approved Permit2 for, the
 * x402 Permit2 proxy's `settle` (permit2-payment.ts). The payload's shape says which.
 */
export class ExactEvmScheme implements ExactScheme {
  readonly family = 'evm' as const;
  private readonly client: PublicClient;
  private readonly chainId: number;
  /**
   * Set by `detectPermit2`: the chain carries Permit2 and x402's proxy, so GET /facilitator/supported
   * offers it. Verification looks at the chain itself each time, whatever this says.
   */
  private permit2Ready = false;

  constructor(
    /** The network adapter's own list: the same failover, time limit and down marks. */
    endpoints: RpcEndpoints,
    private readonly feePayer: EvmFeePayer,
    private readonly network: string,
    /**
     * The tokens it settles (the network's known tokens and the operator's X402_EXTRA_ASSETS): the fee
     * payer pays the gas of whatever contract `asset` names, so only contracts known to behave are accepted.
     */
    private readonly assets: readonly string[],
    private readonly clock: () => number = Date.now,
    /**
     * The embedded anvil's journal: a settlement found landed is reported only once its block is in
     * it, and one found absent only after it followed the chain (chain-durability.ts; @gate402/anvil's journal on the embedded anvil).
     */
    private readonly durability?: ChainDurability | undefined,
  ) {
    this.client = createPublicClient({ transport: failoverTransport(endpoints, endpoints.timeoutMs) });
    this.chainId = Number(network.slice('eip155:'.length));
  }

  signers(): string[] {
    return [this.feePayer.address];
  }

  /** Looks once whether Permit2 payments can settle here, so GET /facilitator/supported can offer them. */
  async detectPermit2(): Promise<boolean> {
    this.permit2Ready = await permit2Available(this.client);
    return this.permit2Ready;
  }

  supportedExtra(): Record<string, unknown> | undefined {
    const methods: AssetTransferMethod[] = ['eip3009', 'permit2'];
    return this.permit2Ready ? { assetTransferMethods: methods } : undefined;
  }

  /**
   * x402's gas sponsoring, where Permit2 payments settle: eip2612GasSponsoring (the proxy's
   * settleWithPermit) and erc20ApprovalGasSponsoring (the buyer's approval funded and broadcast first).
   */
  supportedExtensions(): readonly string[] {
    return this.permit2Ready ? [EIP2612_GAS_SPONSORING, ERC20_APPROVAL_GAS_SPONSORING] : [];
  }

  approvalSuperseded(wire: Uint8Array): Promise<boolean> {
    return approvalSuperseded(this.client, `0x${Buffer.from(wire).toString('hex')}`);
  }

  approvalCovers(wire: Uint8Array, amount: bigint, minedIn?: bigint): Promise<boolean> {
    return approvalCovers(this.client, `0x${Buffer.from(wire).toString('hex')}`, amount, minedIn);
  }

  settlementKey(payload: Readonly<Record<string, unknown>>): string | undefined {
    if (isPermit2Payload(payload)) {
      const permit = permit2AuthorizationOf(payload);
      // Permit2: one (owner, nonce) transfers once, whatever the spender or the signature's encoding.
      return permit === undefined
        ? undefined
        : `${this.network}:exact:permit2:${permit.from}:${permit.nonce}`;
    }
    const auth = authorizationOf(payload);
    // EIP-3009: one (authorizer, nonce) pays once, whatever the signature's encoding.
    return auth === undefined ? undefined : `${this.network}:exact:${auth.from}:${auth.nonce.toLowerCase()}`;
  }

  async checkTerms(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<ExactRefusal | undefined> {
    const transfer = this.transferOf(payload, req);
    return 'valid' in transfer ? transfer : this.termsOf(transfer, req);
  }

  async verify(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
    options: { readonly sellerPays?: boolean } = {},
  ): Promise<ExactVerdict> {
    const transfer = this.transferOf(payload, req);
    if ('valid' in transfer) return transfer;
    const terms = this.termsOf(transfer, req);
    if (terms !== undefined) return terms;
    // Local mode: simulated as the seller, who submits it.
    const submitter = options.sellerPays === true ? req.payTo : this.feePayer.address;
    const refusal =
      transfer.method === 'permit2'
        ? await this.checkPermit2(transfer.permit, req, submitter)
        : await this.check(transfer.auth, req, submitter);
    if (refusal !== undefined) return refusal;
    const payer = transfer.method === 'permit2' ? transfer.permit.from : transfer.auth.from;
    const decimals = await this.call(() =>
      this.client.readContract({
        address: getAddress(req.asset),
        abi: EIP3009_ABI,
        functionName: 'decimals',
      }),
    );
    return { valid: true, payer, decimals };
  }

  /**
   * What the transfer pays against the requirements (ExactScheme.checkTerms): a token this facilitator
   * settles, and the signed token, spender, recipient and amount. Needs nothing from the chain.
   */
  private termsOf(transfer: SignedTransfer, req: ExactRequirements): ExactRefusal | undefined {
    if (transfer.method === 'permit2') {
      return this.checkAsset(transfer.permit.from, req) ?? checkPermit2Terms(transfer.permit, req);
    }
    const { auth } = transfer;
    const unknownAsset = this.checkAsset(auth.from, req);
    if (unknownAsset !== undefined) return unknownAsset;
    if (!isAddress(req.payTo) || getAddress(auth.to) !== getAddress(req.payTo)) {
      return refuse(
        'invalid_exact_evm_recipient_mismatch',
        `the authorization pays ${auth.to}, not ${req.payTo}`,
        auth.from,
      );
    }
    if (auth.value !== req.amount) {
      return refuse(
        'invalid_exact_evm_payload_authorization_value_mismatch',
        `the authorization moves ${auth.value}, not ${req.amount}`,
        auth.from,
      );
    }
    return undefined;
  }

  /** The payload decoded as the transfer method its shape names, if the requirements allow that method. */
  private transferOf(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): SignedTransfer | ExactRefusal {
    const asked = req.extra.assetTransferMethod;
    if (asked !== undefined && asked !== 'eip3009' && asked !== 'permit2') {
      // Only a name is repeated: anything else may be too big, or nest too deep, to print.
      return refuse(
        'invalid_payload',
        typeof asked === 'string'
          ? `extra.assetTransferMethod ${JSON.stringify(asked)} is not supported here: eip3009 or permit2`
          : 'extra.assetTransferMethod must be eip3009 or permit2',
      );
    }
    const method: AssetTransferMethod = isPermit2Payload(payload) ? 'permit2' : 'eip3009';
    if (asked !== undefined && asked !== method) {
      return refuse('invalid_payload', `the requirements ask for ${asked}, the payload is ${method}`);
    }
    if (method === 'permit2') {
      const permit = permit2AuthorizationOf(payload);
      if (permit === undefined) {
        return refuse(
          'invalid_payload',
          'payload must be {signature, permit2Authorization:{from, permitted:{token, amount}, spender, nonce, deadline, witness:{to, validAfter}}}',
        );
      }
      return { method, permit };
    }
    const auth = authorizationOf(payload);
    if (auth === undefined) {
      return refuse(
        'invalid_payload',
        'payload must be {signature, authorization:{from,to,value,validAfter,validBefore,nonce}}',
      );
    }
    return { method, auth };
  }

  /** Estimates gas and fees and reads the pending count now; the draft signs with the allocated nonce. */
  async prepare(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<SettlementDraft> {
    const transfer = this.transferOf(payload, req);
    if ('valid' in transfer) throw new Error('prepare() called on a payload that was not verified');
    const account = privateKeyToAccount(`0x${Buffer.from(this.feePayer.secretKey).toString('hex')}`);
    const { payer, to, data } =
      transfer.method === 'permit2'
        ? { payer: transfer.permit.from, ...permit2SettleCall(transfer.permit) }
        : {
            payer: transfer.auth.from,
            to: getAddress(req.asset),
            data: transferWithAuthorizationData(transfer.auth),
          };
    // erc20ApprovalGasSponsoring: the transfer can only be simulated after the buyer's approval.
    const plan =
      transfer.method === 'permit2'
        ? await sponsoredApprovalPlanNow(
            {
              client: this.client,
              chainId: this.chainId,
              feePayer: account.address,
              maxGas: EVM_MAX_SETTLEMENT_GAS,
            },
            sponsoredApprovalRequest(transfer.permit),
            getAddress(req.asset),
          )
        : undefined;
    return evmSettlementDraft(
      { client: this.client, account, chainId: this.chainId, network: this.network },
      { payer, to, data },
      plan,
    );
  }

  /** The checks of a Permit2 payment (checkPermit2Payment), simulated as sent by `submitter`. */
  private async checkPermit2(
    permit: Permit2Authorization,
    req: ExactRequirements,
    submitter: string,
  ): Promise<ExactRefusal | undefined> {
    const context = {
      client: this.client,
      chainId: this.chainId,
      feePayer: getAddress(submitter),
      maxGas: EVM_MAX_SETTLEMENT_GAS,
      now: this.clock,
      // Local mode: the seller's own wallet settles, and broadcasts nothing of the buyer's.
      sponsorsApprovals: getAddress(submitter) === getAddress(this.feePayer.address),
    };
    return checkPermit2Payment(context, permit, req);
  }

  /** The fee payer pays the gas of whatever contract `asset` names, so only known tokens are settled. */
  private checkAsset(payer: string, req: ExactRequirements): ExactRefusal | undefined {
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
    return undefined;
  }

  async forSeller(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<SellerTransaction | undefined> {
    if (isPermit2Payload(payload)) {
      const permit = permit2AuthorizationOf(payload);
      if (permit === undefined) return undefined;
      // x402's proxy lets any caller settle: Permit2 binds the transfer to the proxy as spender and the
      // witness fixes recipient and amount, so the seller's own call moves exactly what the buyer signed.
      const call = permit2SettleCall(permit);
      return sellerAuthorizationTransaction(
        this.client,
        this.chainId,
        req.payTo,
        call.to,
        call.data,
        // Permit2 accepts the permit in a block stamped at its deadline, none after.
        permit.deadline + 1n,
      );
    }
    const auth = authorizationOf(payload);
    if (auth === undefined) return undefined;
    const data = transferWithAuthorizationData(auth);
    return sellerAuthorizationTransaction(
      this.client,
      this.chainId,
      req.payTo,
      req.asset,
      data,
      auth.validBefore,
    );
  }

  async findLanded(
    built: Uint8Array,
    lastValidBlockHeight: bigint,
  ): Promise<LandedPayment | 'never' | undefined> {
    // It was unused when the transaction was built, at lastValidBlockHeight - LOCAL_VALIDITY_BLOCKS.
    const fromBlock =
      lastValidBlockHeight > LOCAL_VALIDITY_BLOCKS ? lastValidBlockHeight - LOCAL_VALIDITY_BLOCKS : 0n;
    return this.findCarrier(callOf(built), async () => fromBlock);
  }

  /**
   * A facilitator settlement whose own transaction was not mined, or reverted: the transaction that
   * used its authorization (Permit2: spent its nonce through the proxy's settle), whoever sent it;
   * `never` once a block at validBefore (past the permit's deadline) exists and it is still unused.
   * No block number was kept at claiming, so the search starts at the first block stamped at the claim,
   * less a margin for a clock that differs from the chain's.
   */
  async findSettled(signed: Uint8Array, claimedAt: number): Promise<LandedPayment | 'never' | undefined> {
    return this.findCarrier(callOf(signed), () => this.firstBlockSince(claimedAt));
  }

  async findPaid(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
    since: number,
  ): Promise<(LandedPayment & { readonly payer: string }) | undefined> {
    let paid: (ContractCall & { readonly payer: Address }) | undefined;
    if (isPermit2Payload(payload)) {
      const permit = permit2AuthorizationOf(payload);
      paid = permit === undefined ? undefined : { payer: permit.from, ...permit2SettleCall(permit) };
    } else {
      const auth = authorizationOf(payload);
      paid =
        auth === undefined
          ? undefined
          : { payer: auth.from, to: getAddress(req.asset), data: transferWithAuthorizationData(auth) };
    }
    if (paid === undefined) return undefined;
    const found = await this.findCarrier(paid, () => this.firstBlockSince(since));
    return found === 'never' || found === undefined ? undefined : { ...found, payer: getAddress(paid.payer) };
  }

  /**
   * How an EIP-3009 payload's authorization ended, as the chain itself shows it (ExactScheme.authorizationEnded).
   * The token refuses it in any block stamped at or after validBefore, and timestamps never go back along
   * a chain: once the finalized block is stamped at or after validBefore, no later block can use it and
   * no block that could have can be reorganised away. The authorization's state is read at that very
   * block, never at whatever head a node answers with (a lagging node's head says "unused" for an
   * authorization the chain can still take). A node keeping no state that old (a pruned node on a chain
   * whose finality trails by hundreds of blocks) is asked at its own latest block instead, provided that
   * one is at or past the finalized one: an authorization once used stays used, so unused there means
   * unused at the finalized block.
   */
  async authorizationEnded(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
    finalizedSlot: bigint,
  ): Promise<'unused' | 'used' | undefined> {
    if (isPermit2Payload(payload) || !isAddress(req.asset)) return undefined;
    const auth = authorizationOf(payload);
    if (auth === undefined) return undefined;
    const finalized = await this.call(() => this.client.getBlock({ blockNumber: finalizedSlot }));
    if (finalized.timestamp < auth.validBefore) return undefined;
    const usedAt = (blockNumber: bigint) =>
      this.client.readContract({
        address: getAddress(req.asset),
        abi: EIP3009_ABI,
        functionName: 'authorizationState',
        args: [auth.from, auth.nonce],
        blockNumber,
      });
    let used: boolean;
    try {
      used = await usedAt(finalizedSlot);
    } catch {
      const head = await this.call(() => this.client.getBlockNumber());
      if (head < finalizedSlot) {
        throw new ChainError(
          'unavailable',
          `the node's latest block ${head} is behind the finalized ${finalizedSlot}`,
        );
      }
      used = await this.call(() => usedAt(head));
    }
    return used ? 'used' : 'unused';
  }

  /**
   * The first block stamped at `at` (Unix ms), less a margin for a clock that differs from the chain's:
   * where a search for a payment made since then starts. Asked only once the authorization is used:
   * most looks never need it.
   */
  private firstBlockSince(at: number): Promise<bigint> {
    const since = BigInt(Math.floor(at / 1000)) - CLAIM_CLOCK_MARGIN_SECONDS;
    return firstBlockSince(this.client, since > 0n ? since : 0n);
  }

  /** The payment the call (an EIP-3009 transfer, or a settle through x402's Permit2 proxy) makes, landed. */
  private async findCarrier(
    call: ContractCall,
    fromBlock: () => Promise<bigint>,
  ): Promise<LandedPayment | 'never' | undefined> {
    const found = await (call.to != null && getAddress(call.to) === EXACT_PERMIT2_PROXY_ADDRESS
      ? findLandedPermit2(this.client, call, fromBlock)
      : findLandedAuthorization(this.client, call, fromBlock));
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
   * The rest of an EIP-3009 payment, once termsOf accepted what it pays: the token's EIP-712 domain,
   * the validity window, the signature, the nonce, the balance, and a simulation as sent by `submitter`.
   */
  private async check(
    auth: Authorization,
    req: ExactRequirements,
    submitter: string,
  ): Promise<ExactRefusal | undefined> {
    const payer = auth.from;
    const { name, version } = req.extra;
    if (typeof name !== 'string' || typeof version !== 'string') {
      return refuse(
        'invalid_payload',
        'requirements need asset (a contract) and extra.name, extra.version (its EIP-712 domain)',
        payer,
      );
    }
    const now = BigInt(Math.floor(this.clock() / 1000));
    if (auth.validAfter > now) {
      return refuse(
        'invalid_exact_evm_payload_authorization_valid_after',
        'the authorization is not valid yet',
        payer,
      );
    }
    if (auth.validBefore <= now + VALID_BEFORE_MARGIN_SECONDS) {
      return refuse(
        'invalid_exact_evm_payload_authorization_valid_before',
        'the authorization has expired',
        payer,
      );
    }
    const asset = getAddress(req.asset);
    const signatureValid = await this.call(() =>
      this.client.verifyTypedData({
        address: payer,
        domain: { name, version, chainId: this.chainId, verifyingContract: asset },
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message: {
          from: auth.from,
          to: auth.to,
          value: auth.value,
          validAfter: auth.validAfter,
          validBefore: auth.validBefore,
          nonce: auth.nonce,
        },
        signature: auth.signature,
      }),
    ).catch(() => false);
    if (!signatureValid) {
      return refuse('invalid_exact_evm_signature', 'the authorization signature does not verify', payer);
    }
    const [used, balance] = await this.call(() =>
      Promise.all([
        this.client.readContract({
          address: asset,
          abi: EIP3009_ABI,
          functionName: 'authorizationState',
          args: [payer, auth.nonce],
        }),
        this.client.readContract({
          address: asset,
          abi: EIP3009_ABI,
          functionName: 'balanceOf',
          args: [payer],
        }),
      ]),
    );
    if (used)
      return refuse('invalid_exact_evm_nonce_already_used', 'the authorization was already used', payer);
    if (balance < auth.value)
      return refuse('invalid_exact_evm_insufficient_balance', 'the payer holds less than the amount', payer);
    // Estimating the gas runs the call as the fee payer would send it: a revert is a failed simulation.
    const gas = await this.client
      .estimateContractGas({
        account: getAddress(submitter),
        address: asset,
        abi: EIP3009_ABI,
        functionName: 'transferWithAuthorization',
        args: transferWithAuthorizationArgs(auth),
      })
      .catch((error: unknown) =>
        error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error),
      );
    if (typeof gas === 'string') {
      return refuse(
        'invalid_exact_evm_transaction_simulation_failed',
        `the transfer would fail: ${gas}`,
        payer,
      );
    }
    if (gas > EVM_MAX_SETTLEMENT_GAS) {
      return refuse(
        'invalid_payload',
        `the transfer needs ${gas} gas, more than ${EVM_MAX_SETTLEMENT_GAS}`,
        payer,
      );
    }
    return undefined;
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toChainError(error);
    }
  }
}

function transferWithAuthorizationArgs(auth: Authorization) {
  return [
    auth.from,
    auth.to,
    auth.value,
    auth.validAfter,
    auth.validBefore,
    auth.nonce,
    auth.signature,
  ] as const;
}

function transferWithAuthorizationData(auth: Authorization): Hex {
  return encodeFunctionData({
    abi: EIP3009_ABI,
    functionName: 'transferWithAuthorization',
    args: transferWithAuthorizationArgs(auth),
  });
}

function authorizationOf(payload: Readonly<Record<string, unknown>>): Authorization | undefined {
  const { signature, authorization } = payload;
  if (!isHex(signature) || typeof authorization !== 'object' || authorization === null) return undefined;
  const a = authorization as Record<string, unknown>;
  const integer = (v: unknown) => (typeof v === 'string' && /^\d{1,78}$/.test(v) ? BigInt(v) : undefined);
  const [value, validAfter, validBefore] = [integer(a.value), integer(a.validAfter), integer(a.validBefore)];
  if (
    typeof a.from !== 'string' ||
    typeof a.to !== 'string' ||
    !isAddress(a.from) ||
    !isAddress(a.to) ||
    !isHex(a.nonce) ||
    a.nonce.length !== 66 ||
    value === undefined ||
    validAfter === undefined ||
    validBefore === undefined
  ) {
    return undefined;
  }
  return {
    from: getAddress(a.from),
    to: getAddress(a.to),
    value,
    validAfter,
    validBefore,
    nonce: a.nonce,
    signature,
  };
}
