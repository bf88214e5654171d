import {
  address,
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Rpc,
  type Signature,
  type SolanaRpcApi,
  type TransactionMessageBytesBase64,
} from '@solana/kit';
import type { LandedPayment, SellerTransaction } from '../exact-scheme.ts';
import { toChainError } from './solana-errors.ts';

/** A blockhash is valid for 150 blocks after the block it names. */
const BLOCKHASH_VALIDITY_BLOCKS = 150n;
/** Signatures asked for per page of the buyer's history. */
const PAGE = 100;
/** A bound on one search, for a buyer whose history has no block times to stop at. */
const MAX_CANDIDATES = 1_000;
/**
 * The transaction lands after it was built (the seller signs the answer), so candidates whose block is
 * older than the build, by more than clocks may disagree, end the search.
 */
const CLOCK_MARGIN_MS = 60_000;

/**
 * x402 `exact` on Solana in local mode: the buyer's transaction names the seller's wallet as fee payer,
 * so the seller signs it and broadcasts it, not a facilitator. The transaction is passed on exactly as
 * the buyer signed it (any change would void the buyer's signature).
 *
 * Its blockhash was fetched by the buyer before now, so it expires at most 150 blocks after the height
 * now: that bound is never early, which is what calling the payment expired needs (past it, the
 * transaction can never land). Its fee, which the seller pays, is what the chain says it charges for
 * the message (base fee per signature and the buyer's compute-unit price × limit).
 */
export async function sellerTransaction(
  rpc: Rpc<SolanaRpcApi>,
  wire: Uint8Array,
): Promise<SellerTransaction> {
  const message = getBase64Decoder().decode(
    getTransactionDecoder().decode(wire).messageBytes,
  ) as TransactionMessageBytesBase64;
  const [height, fee] = await Promise.all([
    rpc.getBlockHeight({ commitment: 'confirmed' }).send(),
    rpc.getFeeForMessage(message, { commitment: 'confirmed' }).send(),
  ]).catch((error: unknown) => {
    throw toChainError(error);
  });
  return {
    unsigned: wire,
    lastValidBlockHeight: height + BLOCKHASH_VALIDITY_BLOCKS,
    // Null when the blockhash is already unknown to the node: the transaction cannot land then.
    fee: fee.value ?? undefined,
  };
}

/**
 * The transaction with exactly the built message, once it has landed; `never` once the chain's height
 * passed `lastValidBlockHeight` without it (looked up once more after that, since it may have landed
 * just before). Its id is the fee payer's signature, unknown until the seller signs, so it is found
 * among the transfer authority's recent transactions (the buyer signed it, so the chain indexes it
 * under the buyer) and recognised by its message bytes: the same message is the same payment, however
 * it was relayed.
 */
export async function findLandedMessage(
  rpc: Rpc<SolanaRpcApi>,
  built: Uint8Array,
  authority: string,
  lastValidBlockHeight: bigint,
  builtAt: number,
): Promise<LandedPayment | 'never' | undefined> {
  const first = await findMessage(rpc, built, authority, builtAt);
  if (first !== 'unsure' && first !== undefined) return first;
  const height = await rpc
    .getBlockHeight({ commitment: 'confirmed' })
    .send()
    .catch((error: unknown) => {
      throw toChainError(error);
    });
  if (height <= lastValidBlockHeight) return undefined;
  const last = await findMessage(rpc, built, authority, builtAt);
  // Only a search that reached back to the build can say it never landed.
  return last === 'unsure' ? undefined : (last ?? 'never');
}

/**
 * Pages through the buyer's history, newest first, back to the build (however busy the buyer is, its
 * transactions since the build are all looked at); `unsure` when MAX_CANDIDATES ran out first.
 */
async function findMessage(
  rpc: Rpc<SolanaRpcApi>,
  built: Uint8Array,
  authority: string,
  builtAt: number,
): Promise<LandedPayment | 'unsure' | undefined> {
  const expected = Buffer.from(getTransactionDecoder().decode(built).messageBytes);
  const oldest = Math.floor((builtAt - CLOCK_MARGIN_MS) / 1000);
  try {
    let before: Signature | undefined;
    for (let seen = 0; seen < MAX_CANDIDATES; seen += PAGE) {
      const page = await rpc
        .getSignaturesForAddress(address(authority), {
          limit: PAGE,
          commitment: 'confirmed',
          ...(before === undefined ? {} : { before }),
        })
        .send();
      const recent = page.filter((c) => c.blockTime === null || Number(c.blockTime) >= oldest);
      const landed = await matching(
        rpc,
        expected,
        recent.map((c) => c.signature),
      );
      if (landed !== undefined) return landed;
      before = page.at(-1)?.signature;
      if (page.length < PAGE || recent.length < page.length || before === undefined) return undefined;
    }
    return 'unsure';
  } catch (error) {
    throw toChainError(error);
  }
}

/** The landed transaction among `signatures` whose message is `expected`. */
async function matching(
  rpc: Rpc<SolanaRpcApi>,
  expected: Buffer,
  signatures: readonly Signature[],
): Promise<LandedPayment | undefined> {
  for (const signature of signatures) {
    const found = await rpc
      .getTransaction(signature, {
        encoding: 'base64',
        maxSupportedTransactionVersion: 0,
        commitment: 'confirmed',
      })
      .send();
    if (found === null) continue;
    const landed = getTransactionDecoder().decode(getBase64Encoder().encode(found.transaction[0]));
    if (!expected.equals(Buffer.from(landed.messageBytes))) continue;
    return {
      transactionId: signature,
      slot: found.slot,
      error:
        found.meta?.err == null
          ? null
          : JSON.stringify(found.meta.err, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
      fee: found.meta?.fee ?? 0n,
    };
  }
  return undefined;
}

/** The transfer authority (the buyer) of an `exact` transaction: transferChecked's fourth account. */
export function transferAuthorityOf(wire: Uint8Array): string | undefined {
  const message = getCompiledTransactionMessageDecoder().decode(
    getTransactionDecoder().decode(wire).messageBytes,
  );
  // Only legacy and v0 messages pass verification (see ExactSvmScheme).
  if (message.version !== 'legacy' && message.version !== 0) return undefined;
  const index = message.instructions[2]?.accountIndices?.[3];
  return index === undefined ? undefined : String(message.staticAccounts[index]);
}
