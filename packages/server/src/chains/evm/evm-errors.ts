import { BaseError, HttpRequestError, RpcRequestError, TimeoutError, WebSocketRequestError } from 'viem';
import { ChainError } from '../chain-error.ts';

/**
 * Node messages, as geth, reth, anvil and the hosted RPC providers word them. Matched on text because
 * JSON-RPC codes are not standardised for these (anvil says -32003, geth -32000 for all of them).
 */
const INSUFFICIENT_FUNDS = /insufficient funds/i;
/** The same transaction, or another one with its nonce, is already in the pool or in a block. */
const ALREADY_PROCESSED =
  /nonce too low|already known|already imported|known transaction|nonce has already been used/i;

/** Maps what viem threw into a ChainError kind; the node's own words stay in the message and cause. */
export function toChainError(error: unknown): ChainError {
  if (error instanceof ChainError) return error;
  if (!(error instanceof BaseError)) {
    return new ChainError('unavailable', 'the EVM RPC request failed', { cause: error });
  }
  // The endpoint list's own verdict (every endpoint down), wrapped by viem on its way up.
  const verdict = error.walk((e) => e instanceof ChainError);
  if (verdict instanceof ChainError) return verdict;
  const transport = error.walk(
    (e) => e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof WebSocketRequestError,
  );
  if (transport !== null && error.walk((e) => e instanceof RpcRequestError) === null) {
    return new ChainError('unavailable', 'the EVM RPC endpoint could not be reached', { cause: error });
  }
  const text = describe(error);
  if (INSUFFICIENT_FUNDS.test(text)) {
    return new ChainError('insufficient_funds', 'not enough funds for the transfer and its fees', {
      cause: error,
    });
  }
  if (ALREADY_PROCESSED.test(text)) {
    return new ChainError('already_processed', 'the transaction (or its nonce) was already processed', {
      cause: error,
    });
  }
  if (/invalid chain id|invalid sender|invalid signature|rlp|decode/i.test(text)) {
    return new ChainError('invalid_transaction', `the node refused the transaction: ${error.details}`, {
      cause: error,
    });
  }
  return new ChainError('rejected', `the node refused the request: ${error.details || error.shortMessage}`, {
    cause: error,
  });
}

function describe(error: BaseError): string {
  const parts: string[] = [];
  error.walk((e) => {
    if (e instanceof BaseError) parts.push(e.shortMessage, e.details);
    else if (e instanceof Error) parts.push(e.message);
    return false;
  });
  return parts.join('\n');
}
