// JSON-RPC errors with the codes and messages Agave's RPC answers, so clients decode them as they
// would against a real validator (@solana/kit maps the codes; web3.js v1 reads the messages).

export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const parseError = () => new RpcError(-32700, 'Parse error');
export const invalidRequest = (detail?: string) =>
  new RpcError(-32600, detail === undefined ? 'Invalid request' : `Invalid request: ${detail}`);
export const methodNotFound = () => new RpcError(-32601, 'Method not found');
export const invalidParams = (message: string) => new RpcError(-32602, message);
export const internalError = () => new RpcError(-32603, 'Internal error');

/** Agave's `verify_pubkey` / `verify_signature` failures. */
export const invalidParamValue = () => invalidParams('Invalid param: Invalid');

export const preflightFailure = (message: string, result: unknown) => new RpcError(-32002, message, result);
export const signatureVerificationFailure = () =>
  new RpcError(-32003, 'Transaction signature verification failure');
export const blockNotAvailable = (slot: number) =>
  new RpcError(-32004, `Block not available for slot ${slot}`);
/** Agave's answer for a slot that has no block: skipped (here also: dropped by the test hook). */
export const slotSkipped = (slot: number) =>
  new RpcError(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`);
export const unsupportedTransactionVersion = (version: number) =>
  new RpcError(
    -32015,
    `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${version}`,
  );
export const minContextSlotNotReached = (contextSlot: number) =>
  new RpcError(-32016, 'Minimum context slot has not been reached', { contextSlot });
