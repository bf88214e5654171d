import {
  isSolanaError,
  SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM,
  SOLANA_ERROR__INSTRUCTION_ERROR__INSUFFICIENT_FUNDS,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED,
  SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND,
  SOLANA_ERROR__TRANSACTION_ERROR__INSUFFICIENT_FUNDS_FOR_FEE,
  SOLANA_ERROR__TRANSACTION_ERROR__INSUFFICIENT_FUNDS_FOR_RENT,
} from '@solana/kit';
import { ChainError } from '../chain-error.ts';
import { RpcTransportError } from './node-http-transport.ts';

/** The System program's "ResultWithNegativeLamports": a transfer of more than the source holds. */
const SYSTEM_INSUFFICIENT_LAMPORTS = 1;

/** Maps what @solana/kit threw while sending into a ChainError kind. */
export function toChainError(error: unknown): ChainError {
  if (error instanceof ChainError) return error;
  if (isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE)) {
    const cause = error.cause;
    const logs = error.context.logs?.join('\n') ?? '';
    if (
      isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__INSUFFICIENT_FUNDS_FOR_FEE) ||
      isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__INSUFFICIENT_FUNDS_FOR_RENT) ||
      isSolanaError(cause, SOLANA_ERROR__INSTRUCTION_ERROR__INSUFFICIENT_FUNDS) ||
      (isSolanaError(cause, SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM) &&
        cause.context.code === SYSTEM_INSUFFICIENT_LAMPORTS &&
        logs.includes('insufficient lamports'))
    ) {
      return new ChainError('insufficient_funds', 'not enough funds for the transfer and its fees', {
        cause: error,
      });
    }
    if (isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND)) {
      return new ChainError('blockhash_expired', 'the transaction blockhash has expired', { cause: error });
    }
    if (isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED)) {
      return new ChainError('already_processed', 'the transaction was already processed', { cause: error });
    }
    return new ChainError('rejected', 'the chain refused the transaction', { cause: error });
  }
  if (error instanceof RpcTransportError) {
    return new ChainError('unavailable', 'the Solana RPC endpoint could not be reached', { cause: error });
  }
  if (isSolanaError(error)) {
    return new ChainError('invalid_transaction', 'the RPC endpoint refused the request', { cause: error });
  }
  return new ChainError('unavailable', 'the Solana RPC request failed', { cause: error });
}
