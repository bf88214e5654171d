/**
 * Every reason code gate402's x402 facilitator and schemes answer (`invalidReason` / `errorReason` of
 * /facilitator/verify and /settle, and `paymentProof` details of receives they back), in one typed list: a
 * code not listed here does not compile. Names are x402's where the concept is x402's; the gate402-only
 * ones are marked. EVM names are those of the stock 2.x EVM facilitator (`invalid_exact_evm_signature`,
 * `…_recipient_mismatch`, `…_nonce_already_used`, …); a v1 payload is answered under x402 1.x's names for
 * the same refusals (v1ReasonOf). A remote facilitator's answer is passed through as it came, as a plain
 * string.
 */
export const X402_REASONS = [
  // The request: x402 core.
  'invalid_payload',
  'invalid_payment_requirements',
  'invalid_scheme',
  'invalid_network',
  'invalid_x402_version',
  'insufficient_funds',
  'unsupported_asset',
  'duplicate_settlement',
  'settlement_pending',
  'transaction_failed',
  // gate402's own: what the built-in facilitator refuses to sponsor, and a payment in another asset.
  'amount_below_minimum',
  'fee_budget_exceeded',
  'asset_mismatch',
  // gate402's own: the payment-identifier extension's 409 (the id used with another payload; still running).
  'payment_identifier_conflict',
  'payment_identifier_in_use',
  // exact on EVM: EIP-3009 transferWithAuthorization (names of @x402/evm 2.x).
  'invalid_exact_evm_nonce_already_used',
  'invalid_exact_evm_payload_authorization_valid_after',
  'invalid_exact_evm_payload_authorization_valid_before',
  'invalid_exact_evm_payload_authorization_value_mismatch',
  'invalid_exact_evm_recipient_mismatch',
  'invalid_exact_evm_signature',
  'invalid_exact_evm_insufficient_balance',
  'invalid_exact_evm_transaction_simulation_failed',
  // The same refusals under x402 1.x's names, answered only to a v1 payload (v1ReasonOf).
  'invalid_exact_evm_payload_authorization_nonce_used',
  'invalid_exact_evm_payload_recipient_mismatch',
  'invalid_exact_evm_payload_signature',
  'invalid_exact_evm_payload_transaction_simulation_failed',
  // exact on EVM: Permit2 through x402's proxy.
  'invalid_permit2_recipient_mismatch',
  'invalid_permit2_signature',
  'invalid_permit2_spender',
  'permit2_allowance_required',
  'permit2_amount_mismatch',
  'permit2_deadline_expired',
  'permit2_insufficient_balance',
  'permit2_invalid_nonce',
  'permit2_not_yet_valid',
  'permit2_proxy_not_deployed',
  'permit2_simulation_failed',
  'permit2_token_mismatch',
  // exact on EVM with Permit2: the eip2612GasSponsoring extension (settleWithPermit).
  'invalid_eip2612_extension_format',
  'eip2612_from_mismatch',
  'eip2612_asset_mismatch',
  'eip2612_spender_not_permit2',
  'eip2612_deadline_expired',
  'permit2_2612_amount_mismatch',
  // exact and upto on EVM with Permit2: the erc20ApprovalGasSponsoring extension (names of @x402/evm 2.x,
  // then gate402's own for the caps on what it funds and an approval another payment already funds).
  'invalid_erc20_approval_extension_format',
  'erc20_approval_from_mismatch',
  'erc20_approval_asset_mismatch',
  'erc20_approval_spender_not_permit2',
  'erc20_approval_tx_wrong_target',
  'erc20_approval_tx_wrong_selector',
  'erc20_approval_tx_wrong_spender',
  'erc20_approval_tx_invalid_calldata',
  'erc20_approval_tx_signer_mismatch',
  'erc20_approval_tx_invalid_signature',
  'erc20_approval_tx_parse_failed',
  'erc20_approval_tx_nonce_mismatch',
  'erc20_approval_tx_gas_too_high',
  'erc20_approval_tx_fee_too_high',
  'erc20_approval_in_use',
  // gate402's own: an approval no node would mine now (max fee under the next block's base fee, or a
  // priority fee far under the network's suggestion), or one given less gas than it uses. It would hold
  // the fee payer's nonce, and every later settlement, until given up on (sponsored-approval-step).
  'erc20_approval_tx_fee_too_low',
  'erc20_approval_tx_gas_too_low',
  // gate402's own: a funding refused to a payer whose funded payment did not settle (or has one open), or
  // to an account at X402_MAX_UNSETTLED_APPROVAL_FUNDINGS (see approval-funding-limits); any sponsoring
  // refused to a payer carrying code (EIP-7702), whose balance can move without its nonce.
  'erc20_approval_sponsoring_refused',
  // upto on EVM (Permit2 through x402's upto proxy; names of @x402/evm 2.x): the witness names another
  // facilitator, and a settle asking more than the signed maximum.
  'upto_facilitator_mismatch',
  'invalid_upto_evm_payload_settlement_exceeds_amount',
  // upto on Solana: x402's payment channel (names of @x402/svm 2.x's upto facilitator; the deposit's open
  // co-signed as fee and rent payer, the claim a settleAndSeal + distribute with a receiver-authorizer voucher).
  'facilitator_mismatch',
  'invalid_upto_svm_payload_settlement_exceeds_amount',
  'invalid_upto_svm_payload_open_transaction',
  'invalid_upto_svm_payload_amount_mismatch',
  'invalid_upto_svm_payload_deposit_not_ceiling',
  'invalid_upto_svm_payload_channel_id',
  'invalid_upto_svm_payload_payer_mismatch',
  'invalid_upto_svm_payload_receiver_authorizer',
  'invalid_upto_svm_payload_expired',
  'invalid_upto_svm_payload_not_yet_active',
  'invalid_upto_svm_payload_channel_lifetime_exceeded',
  'invalid_upto_svm_payload_expires_at_mismatch',
  'invalid_upto_svm_payload_unexpected_voucher',
  'invalid_upto_svm_payload_voucher_signature',
  'invalid_upto_svm_payment_requirements',
  'invalid_upto_svm_authorizer_address_mismatch',
  'invalid_upto_svm_channel_state',
  'invalid_upto_svm_settlement_simulation',
  // gate402's own: an escrow claim whose deposit this account did not settle here (or not yet), and a
  // channel whose settled amount does not all go to payTo.
  'upto_deposit_not_settled',
  // gate402's own: a deposit refused because the account holds X402_UPTO_MAX_OPEN_CHANNELS unclaimed
  // deposits, or its channels X402_UPTO_MAX_CHANNEL_RENT of the fee payer's rent (the message says which).
  'upto_open_channels_exceeded',
  'invalid_upto_svm_payload_recipient_mismatch',
  // exact on Solana: an SPL transferChecked the facilitator co-signs as fee payer.
  'invalid_exact_svm_payload_amount_mismatch',
  'invalid_exact_svm_payload_excessive_signers',
  'invalid_exact_svm_payload_memo_mismatch',
  'invalid_exact_svm_payload_mint_mismatch',
  'invalid_exact_svm_payload_missing_fee_payer',
  'invalid_exact_svm_payload_no_transfer_instruction',
  'invalid_exact_svm_payload_recipient_mismatch',
  'invalid_exact_svm_payload_signature_invalid',
  'invalid_exact_svm_payload_transaction',
  'invalid_exact_svm_payload_transaction_could_not_be_decoded',
  'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
  'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
  'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high',
  'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
  'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
  'invalid_exact_svm_payload_transaction_instructions_length',
  'invalid_exact_svm_payload_transaction_simulation_failed',
  // The payTo has no token account for the asset, so a transferChecked to it cannot execute. @x402/svm
  // 2.27 defines no name of its own for it (its simulation fails with InvalidAccountData); this is the
  // one x402's reason catalogue (ErrorReasons of the x402 package) gives it.
  'invalid_exact_svm_payload_transaction_receiver_ata_not_found',
  'invalid_exact_svm_payload_unknown_optional_instruction',
] as const;

export type X402Reason = (typeof X402_REASONS)[number];

/**
 * What x402 1.x called the refusals @x402/evm 2.x renamed. A v1 payload is answered under these (v1
 * buyers and sellers match on them; x402 1.x's own reason list has no `_nonce_already_used` or
 * `_insufficient_balance`, which become its closest names); every other name is the same in both.
 */
const V1_REASON_NAMES: Partial<Record<X402Reason, X402Reason>> = {
  invalid_exact_evm_nonce_already_used: 'invalid_exact_evm_payload_authorization_nonce_used',
  invalid_exact_evm_recipient_mismatch: 'invalid_exact_evm_payload_recipient_mismatch',
  invalid_exact_evm_signature: 'invalid_exact_evm_payload_signature',
  invalid_exact_evm_insufficient_balance: 'insufficient_funds',
  invalid_exact_evm_transaction_simulation_failed: 'invalid_exact_evm_payload_transaction_simulation_failed',
  permit2_insufficient_balance: 'insufficient_funds',
};

/** The name a reason has for a payload of x402 version `version` (1: x402 1.x's name). */
export function reasonForVersion(reason: string, version: number): string {
  if (version !== 1 || !isX402Reason(reason)) return reason;
  return V1_REASON_NAMES[reason] ?? reason;
}

export function isX402Reason(value: unknown): value is X402Reason {
  return typeof value === 'string' && (X402_REASONS as readonly string[]).includes(value);
}
