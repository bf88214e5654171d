import {
  type Address,
  BaseError,
  ContractFunctionExecutionError,
  encodeAbiParameters,
  getAddress,
  type Hex,
  keccak256,
  type PublicClient,
  parseAbi,
  recoverAddress,
  toHex,
} from 'viem';
import { type ExactRefusal, refuse } from '../exact-scheme.ts';
import { toChainError } from './evm-errors.ts';
import { PERMIT2_ADDRESS } from './permit2-addresses.ts';

/**
 * x402's `eip2612GasSponsoring` extension (exact on EVM with Permit2): a buyer who never approved Permit2
 * for the token signs, beside its Permit2 permit, the token's own EIP-2612 `permit` approving Permit2, and
 * the facilitator submits both in one call of the proxy's `settleWithPermit` (paying the gas). The buyer's
 * payment payload carries it as `extensions.eip2612GasSponsoring.info`:
 * `{from, asset, spender, amount, nonce, deadline, signature, version}` — decimal strings, the signature
 * 65 bytes (r, s, v).
 */
export const EIP2612_GAS_SPONSORING = 'eip2612GasSponsoring';

/**
 * x402's `erc20ApprovalGasSponsoring` extension: the buyer signs an `approve(Permit2)` transaction and
 * asks the facilitator to fund its gas and broadcast it (erc20-approval-gas-sponsoring.ts).
 */
export const ERC20_APPROVAL_GAS_SPONSORING = 'erc20ApprovalGasSponsoring';

/** An EIP-2612 permit approving Permit2, as the buyer signed it. */
export interface Eip2612Permit {
  readonly from: Address;
  readonly asset: Address;
  readonly spender: Address;
  readonly value: bigint;
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly r: Hex;
  readonly s: Hex;
  readonly v: number;
}

/** The extension, present but not in the shape x402 defines: refused as such. */
export interface MalformedSponsoring {
  readonly malformed: string;
}

/** The key under which payment-request.ts passes a v2 payload's gas-sponsoring extensions to the scheme. */
export const SPONSORING_FIELD = 'extensions';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UINT = /^\d{1,78}$/;
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;

/**
 * The EIP-2612 permit a payload carries (`extensions.eip2612GasSponsoring.info`); undefined when it
 * carries none, `{malformed}` when the extension is there but not in x402's shape.
 */
export function eip2612PermitOf(
  payload: Readonly<Record<string, unknown>>,
): Eip2612Permit | MalformedSponsoring | undefined {
  const extension = record(record(payload[SPONSORING_FIELD])?.[EIP2612_GAS_SPONSORING]);
  if (extension === undefined) return undefined;
  const info = record(extension.info);
  if (info === undefined) return { malformed: `${EIP2612_GAS_SPONSORING}.info must be an object` };
  const text = (key: string, pattern: RegExp) => {
    const value = info[key];
    return typeof value === 'string' && pattern.test(value) ? value : undefined;
  };
  const [from, asset, spender] = [text('from', ADDRESS), text('asset', ADDRESS), text('spender', ADDRESS)];
  const [amount, nonce, deadline] = [text('amount', UINT), text('nonce', UINT), text('deadline', UINT)];
  const signature = text('signature', SIGNATURE);
  const version = text('version', /^\d{1,9}(\.\d{1,9}){0,3}$/);
  if (
    from === undefined ||
    asset === undefined ||
    spender === undefined ||
    amount === undefined ||
    nonce === undefined ||
    deadline === undefined ||
    signature === undefined ||
    version === undefined ||
    [amount, nonce, deadline].some((n) => BigInt(n) >= 2n ** 256n)
  ) {
    return {
      malformed: `${EIP2612_GAS_SPONSORING}.info needs from, asset, spender (addresses), amount, nonce, deadline (decimal strings), signature (65 bytes, hex) and version`,
    };
  }
  const v = Number.parseInt(signature.slice(130, 132), 16);
  return {
    from: getAddress(from),
    asset: getAddress(asset),
    spender: getAddress(spender),
    value: BigInt(amount),
    nonce: BigInt(nonce),
    deadline: BigInt(deadline),
    r: `0x${signature.slice(2, 66)}`,
    s: `0x${signature.slice(66, 130)}`,
    // Some signers write the recovery id as 0/1; tokens take 27/28.
    v: v < 27 ? v + 27 : v,
  };
}

/** Whether `value` is a malformed extension rather than a permit. */
export function isMalformed(value: Eip2612Permit | MalformedSponsoring): value is MalformedSponsoring {
  return 'malformed' in value;
}

/**
 * What the permit approves, against the Permit2 permit it is to fund, as the stock facilitator checks it
 * and in its order: well formed, signed for this payer, this token, Permit2 as spender; then (x402's
 * canonical proxy reverts otherwise) for exactly the permitted amount. Needs nothing from the chain.
 */
export function checkEip2612Terms(
  permit: Eip2612Permit | MalformedSponsoring,
  payer: Address,
  token: Address,
  amount: bigint,
): ExactRefusal | undefined {
  if (isMalformed(permit)) return refuse('invalid_eip2612_extension_format', permit.malformed, payer);
  if (permit.from !== payer) {
    return refuse(
      'eip2612_from_mismatch',
      `the EIP-2612 permit is signed for ${permit.from}, not the payer ${payer}`,
      payer,
    );
  }
  if (permit.asset !== token) {
    return refuse(
      'eip2612_asset_mismatch',
      `the EIP-2612 permit is for ${permit.asset}, not ${token}`,
      payer,
    );
  }
  if (permit.spender !== PERMIT2_ADDRESS) {
    return refuse(
      'eip2612_spender_not_permit2',
      `the EIP-2612 permit approves ${permit.spender}, not Permit2 (${PERMIT2_ADDRESS})`,
      payer,
    );
  }
  if (permit.value !== amount) {
    return refuse(
      'permit2_2612_amount_mismatch',
      `the EIP-2612 permit approves ${permit.value}, x402's proxy takes only the permitted amount ${amount}`,
      payer,
    );
  }
  return undefined;
}

const EIP2612_READS_ABI = parseAbi([
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function nonces(address owner) view returns (uint256)',
]);

const PERMIT_TYPEHASH = keccak256(
  toHex('Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)'),
);

/**
 * Whether the token would accept the permit now: it is signed by its owner under the token's own EIP-712
 * domain (read from the token, so no name or version need be trusted) with the owner's current EIP-2612
 * nonce. A permit already used (its nonce spent) or signed by another key is not. Tokens that verify
 * ERC-1271 signatures of contract wallets in `permit` are not asked: x402's proxy passes (v, r, s) only.
 */
export async function eip2612PermitUsable(client: PublicClient, permit: Eip2612Permit): Promise<boolean> {
  const read = await Promise.all([
    client.readContract({ address: permit.asset, abi: EIP2612_READS_ABI, functionName: 'DOMAIN_SEPARATOR' }),
    client.readContract({
      address: permit.asset,
      abi: EIP2612_READS_ABI,
      functionName: 'nonces',
      args: [permit.from],
    }),
  ]).catch((error: unknown) => {
    // A token without EIP-2612 (no DOMAIN_SEPARATOR or nonces) reverts or answers nothing: no permit of it
    // can approve Permit2. Anything else is the chain's failure.
    if (error instanceof BaseError && error.walk((e) => e instanceof ContractFunctionExecutionError))
      return undefined;
    throw toChainError(error);
  });
  if (read === undefined) return false;
  const [domainSeparator, nonce] = read;
  if (nonce !== permit.nonce) return false;
  const structHash = keccak256(
    encodeAbiParameters(
      [
        { type: 'bytes32' },
        { type: 'address' },
        { type: 'address' },
        { type: 'uint256' },
        { type: 'uint256' },
        { type: 'uint256' },
      ],
      [PERMIT_TYPEHASH, permit.from, permit.spender, permit.value, permit.nonce, permit.deadline],
    ),
  );
  const digest = keccak256(`0x1901${domainSeparator.slice(2)}${structHash.slice(2)}`);
  const signer = await recoverAddress({
    hash: digest,
    signature: `0x${permit.r.slice(2)}${permit.s.slice(2)}${permit.v.toString(16).padStart(2, '0')}`,
  }).catch(() => undefined);
  return signer !== undefined && getAddress(signer) === permit.from;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
