import {
  type Address,
  createPublicClient,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  isAddress,
  isHex,
  keccak256,
  type PublicClient,
  parseAbi,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  type ExactRefusal,
  type ExactRequirements,
  type ExactScheme,
  type ExactVerdict,
  type PreparedSettlementTx,
  refuse,
} from '../exact-scheme.ts';
import { toChainError } from './evm-errors.ts';

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

/** x402 `exact` on EVM with EIP-3009: the facilitator submits transferWithAuthorization and pays the gas. */
export class ExactEvmScheme implements ExactScheme {
  readonly family = 'evm' as const;
  private readonly client: PublicClient;
  private readonly chainId: number;

  constructor(
    rpcUrl: string,
    private readonly feePayer: EvmFeePayer,
    private readonly network: string,
    /**
     * The tokens it settles (the network's known tokens): the fee payer pays the gas of whatever
     * contract `asset` names, so only contracts known to behave are accepted.
     */
    private readonly assets: readonly string[],
    private readonly clock: () => number = Date.now,
  ) {
    this.client = createPublicClient({ transport: http(rpcUrl) });
    this.chainId = Number(network.slice('eip155:'.length));
  }

  signers(): string[] {
    return [this.feePayer.address];
  }

  supportedExtra(): undefined {
    return undefined;
  }

  settlementKey(payload: Readonly<Record<string, unknown>>): string | undefined {
    const auth = authorizationOf(payload);
    // EIP-3009: one (authorizer, nonce) pays once, whatever the signature's encoding.
    return auth === undefined ? undefined : `${this.network}:exact:${auth.from}:${auth.nonce.toLowerCase()}`;
  }

  async verify(payload: Readonly<Record<string, unknown>>, req: ExactRequirements): Promise<ExactVerdict> {
    const auth = authorizationOf(payload);
    if (auth === undefined) {
      return refuse(
        'invalid_payload',
        'payload must be {signature, authorization:{from,to,value,validAfter,validBefore,nonce}}',
      );
    }
    const refusal = await this.check(auth, req);
    if (refusal !== undefined) return refusal;
    const decimals = await this.call(() =>
      this.client.readContract({
        address: getAddress(req.asset),
        abi: EIP3009_ABI,
        functionName: 'decimals',
      }),
    );
    return { valid: true, payer: auth.from, decimals };
  }

  async prepare(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
    nonces: { allocate(network: string, address: string, floor: bigint): Promise<bigint> },
  ): Promise<PreparedSettlementTx> {
    const auth = authorizationOf(payload);
    if (auth === undefined) throw new Error('prepare() called on a payload that was not verified');
    const account = privateKeyToAccount(`0x${Buffer.from(this.feePayer.secretKey).toString('hex')}`);
    const data = encodeFunctionData({
      abi: EIP3009_ABI,
      functionName: 'transferWithAuthorization',
      args: [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, auth.signature],
    });
    const to = getAddress(req.asset);
    const [gas, fees, pending] = await this.call(() =>
      Promise.all([
        this.client.estimateGas({ account: account.address, to, data }),
        this.client.estimateFeesPerGas(),
        this.client.getTransactionCount({ address: account.address, blockTag: 'pending' }),
      ]),
    );
    const nonce = await nonces.allocate(this.network, account.address, BigInt(pending));
    const serialized = await account.signTransaction({
      chainId: this.chainId,
      type: 'eip1559',
      to,
      data,
      // A margin over the estimate: the authorization's storage writes cost the same on every call.
      gas: (gas * 12n) / 10n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      nonce: Number(nonce),
    });
    return {
      payer: auth.from,
      transactionId: keccak256(serialized),
      wire: Buffer.from(serialized.slice(2), 'hex'),
      lastValidBlockHeight: null,
      nonce: { address: account.address, value: nonce },
    };
  }

  private async check(auth: Authorization, req: ExactRequirements): Promise<ExactRefusal | undefined> {
    const payer = auth.from;
    const { name, version } = req.extra;
    if (
      !isAddress(req.asset) ||
      !this.assets.some((a) => isAddress(a) && getAddress(a) === getAddress(req.asset))
    ) {
      return refuse(
        'invalid_payload',
        `asset ${req.asset} is not a token this facilitator settles; see GET /networks`,
        payer,
      );
    }
    if (typeof name !== 'string' || typeof version !== 'string') {
      return refuse(
        'invalid_payload',
        'requirements need asset (a contract) and extra.name, extra.version (its EIP-712 domain)',
        payer,
      );
    }
    if (!isAddress(req.payTo) || getAddress(auth.to) !== getAddress(req.payTo)) {
      return refuse(
        'invalid_exact_evm_payload_recipient_mismatch',
        `the authorization pays ${auth.to}, not ${req.payTo}`,
        payer,
      );
    }
    if (auth.value !== req.amount) {
      return refuse(
        'invalid_exact_evm_payload_authorization_value_mismatch',
        `the authorization moves ${auth.value}, not ${req.amount}`,
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
      return refuse(
        'invalid_exact_evm_payload_signature',
        'the authorization signature does not verify',
        payer,
      );
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
      return refuse(
        'invalid_exact_evm_payload_authorization_nonce_used',
        'the authorization was already used',
        payer,
      );
    if (balance < auth.value)
      return refuse('insufficient_funds', 'the payer holds less than the amount', payer);
    // Estimating the gas runs the call as the fee payer would send it: a revert is a failed simulation.
    const gas = await this.client
      .estimateContractGas({
        account: getAddress(this.feePayer.address),
        address: asset,
        abi: EIP3009_ABI,
        functionName: 'transferWithAuthorization',
        args: [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, auth.signature],
      })
      .catch((error: unknown) =>
        error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error),
      );
    if (typeof gas === 'string') {
      return refuse(
        'invalid_exact_evm_payload_transaction_simulation_failed',
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
