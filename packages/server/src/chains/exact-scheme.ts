import type { ChainFamily } from '../domain/address.ts';

/**
 * The x402 `exact` scheme on one chain family (Solana: an SPL transferChecked the buyer signs and the
 * facilitator pays the fee for; EVM: an EIP-3009 transferWithAuthorization the facilitator submits).
 * Services see plain data: the payload as x402 sends it, requirements with bigint amounts, and wire bytes.
 */
export interface ExactScheme {
  readonly family: ChainFamily;
  /** The facilitator's own addresses that sign and pay fees (GET /facilitator/supported `signers`). */
  signers(): readonly string[];
  /** What `kinds[].extra` says for this family (Solana: the fee payer), if anything. */
  supportedExtra(): Record<string, unknown> | undefined;
  /**
   * What makes this payment unique, from the payload alone (Solana: the transaction message; EVM: the
   * authorization's signer and nonce): the key of its settlement row. Undefined when the payload is
   * not even decodable.
   */
  settlementKey(payload: Readonly<Record<string, unknown>>): string | undefined;
  /** Every check short of broadcasting, including a simulation against the chain now. */
  verify(payload: Readonly<Record<string, unknown>>, requirements: ExactRequirements): Promise<ExactVerdict>;
  /**
   * The transaction that settles a verified payload, signed by the facilitator and not yet broadcast.
   * `nonces` allocates the facilitator's EVM nonce in the caller's database transaction.
   */
  prepare(
    payload: Readonly<Record<string, unknown>>,
    requirements: ExactRequirements,
    nonces: { allocate(network: string, address: string, floor: bigint): Promise<bigint> },
  ): Promise<PreparedSettlementTx>;
}

export interface ExactRequirements {
  /** The configured network that carries it (an alias already resolved). */
  readonly network: string;
  readonly asset: string;
  /** Atomic units of the asset, exactly what must be paid. */
  readonly amount: bigint;
  readonly payTo: string;
  readonly maxTimeoutSeconds: number;
  readonly extra: Readonly<Record<string, unknown>>;
}

export type ExactVerdict =
  | { readonly valid: true; readonly payer: string; readonly decimals: number }
  | { readonly valid: false; readonly reason: string; readonly message: string; readonly payer?: string };

export interface PreparedSettlementTx {
  readonly payer: string;
  /** Signature (Solana) or hash (EVM) of `wire`, known before it is broadcast. */
  readonly transactionId: string;
  readonly wire: Uint8Array;
  /** Past this block height the transaction can never land (Solana); null when it never expires by itself. */
  readonly lastValidBlockHeight: bigint | null;
  /** EVM: the facilitator's nonce this transaction took (from `nonces`), with the address it belongs to. */
  readonly nonce?: { readonly address: string; readonly value: bigint };
}

export type ExactRefusal = Extract<ExactVerdict, { valid: false }>;

/** A verdict refusing the payload with an x402 reason code. */
export function refuse(reason: string, message: string, payer?: string): ExactRefusal {
  return payer === undefined ? { valid: false, reason, message } : { valid: false, reason, message, payer };
}
