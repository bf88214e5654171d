import {
  address,
  appendTransactionMessageInstructions,
  createKeyPairSignerFromBytes,
  createSolanaRpcFromTransport,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { findAssociatedTokenPda, getCreateAssociatedTokenIdempotentInstruction } from '@solana-program/token';
import { ChainError } from '../chain-error.ts';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import { failoverTransport } from './failover-transport.ts';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from './mint-account.ts';
import { toChainError } from './solana-errors.ts';

/** What became of an owner's associated token account for a mint. */
export interface TokenAccountState {
  /** The associated token account's address (where x402 `exact` payments to the owner go). */
  readonly account: string;
  readonly exists: boolean;
  /** The transaction that opened it now; undefined when it existed (or was not opened). */
  readonly signature?: string;
}

/** A token account's size: SPL Token's, and Token-2022's associated ones (with ImmutableOwner). */
const TOKEN_ATA_SIZE = 165;
const TOKEN_2022_ATA_SIZE = 170;
/** The fee of the one signature of the opening transaction (no priority fee). */
const SIGNATURE_FEE = 5_000n;

/** How long opening waits for its transaction to be confirmed. */
const CONFIRM_WAIT_MS = 30_000;

/** Openings under way, by account: two asks for the same account at once send one transaction. */
const opening = new Map<string, Promise<TokenAccountState | undefined>>();

/**
 * The associated token account of `owner` for `mint` (either token program), read as the confirmed
 * bank sees it; undefined when `mint` is no mint of either token program.
 */
export async function tokenAccountOf(
  endpoints: RpcEndpoints,
  owner: string,
  mint: string,
): Promise<(TokenAccountState & { tokenProgram: string }) | undefined> {
  const rpc = createSolanaRpcFromTransport(failoverTransport(endpoints));
  const read = (account: string) =>
    rpc
      .getAccountInfo(address(account), { encoding: 'base64', commitment: 'confirmed' })
      .send()
      .catch((error: unknown) => {
        throw toChainError(error);
      });
  const mintAccount = (await read(mint)).value;
  const tokenProgram = String(mintAccount?.owner ?? '');
  if (tokenProgram !== TOKEN_PROGRAM && tokenProgram !== TOKEN_2022_PROGRAM) return undefined;
  const [ata] = await findAssociatedTokenPda({
    mint: address(mint),
    owner: address(owner),
    tokenProgram: address(tokenProgram),
  });
  return { account: ata, exists: (await read(ata)).value !== null, tokenProgram };
}

/**
 * Opens `owner`'s associated token account for `mint` if it does not exist, the owner paying the
 * transaction fee and the account's rent-exempt deposit from its own SOL (it gets the deposit back if it
 * ever closes the account). Idempotent: an existing account is answered as it is, and the instruction
 * is CreateIdempotent, so an account opened meanwhile by anyone (another instance, the buyer) makes the
 * transaction a no-op rather than a failure; asks for one account at once in this process share one
 * transaction. `secretKey`: the owner's 64-byte key. Undefined when `mint` is no mint.
 */
export function openTokenAccount(
  endpoints: RpcEndpoints,
  secretKey: Uint8Array,
  owner: string,
  mint: string,
): Promise<TokenAccountState | undefined> {
  const key = `${owner}:${mint}`;
  const running = opening.get(key);
  if (running !== undefined) return running;
  const started = open(endpoints, secretKey.slice(), owner, mint).finally(() => opening.delete(key));
  opening.set(key, started);
  return started;
}

async function open(
  endpoints: RpcEndpoints,
  secretKey: Uint8Array,
  owner: string,
  mint: string,
): Promise<TokenAccountState | undefined> {
  try {
    const state = await tokenAccountOf(endpoints, owner, mint);
    if (state === undefined) return undefined;
    if (state.exists) return { account: state.account, exists: true };
    const rpc = createSolanaRpcFromTransport(failoverTransport(endpoints));
    // The owner pays the deposit and the fee: without them the node's refusal would not say so.
    const size = BigInt(state.tokenProgram === TOKEN_2022_PROGRAM ? TOKEN_2022_ATA_SIZE : TOKEN_ATA_SIZE);
    const [deposit, { value: lamports }] = await Promise.all([
      rpc.getMinimumBalanceForRentExemption(size).send(),
      rpc.getBalance(address(owner), { commitment: 'confirmed' }).send(),
    ]).catch((error: unknown) => {
      throw toChainError(error);
    });
    if (lamports < deposit + SIGNATURE_FEE) {
      throw new ChainError(
        'insufficient_funds',
        `opening the token account takes ${deposit + SIGNATURE_FEE} lamports (its rent-exempt deposit and the fee); ${owner} holds ${lamports}`,
      );
    }
    const signer = await createKeyPairSignerFromBytes(secretKey);
    const { value: latest } = await rpc
      .getLatestBlockhash({ commitment: 'confirmed' })
      .send()
      .catch((error: unknown) => {
        throw toChainError(error);
      });
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(signer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
      (m) =>
        appendTransactionMessageInstructions(
          [
            getCreateAssociatedTokenIdempotentInstruction({
              payer: signer,
              ata: address(state.account),
              owner: address(owner),
              mint: address(mint),
              tokenProgram: address(state.tokenProgram),
            }),
          ],
          m,
        ),
    );
    const signed = await signTransactionMessageWithSigners(message);
    const signature = getSignatureFromTransaction(signed);
    await rpc
      .sendTransaction(getBase64EncodedWireTransaction(signed), {
        encoding: 'base64',
        preflightCommitment: 'confirmed',
      })
      .send()
      .catch((error: unknown) => {
        throw toChainError(error);
      });
    const deadline = Date.now() + CONFIRM_WAIT_MS;
    while (Date.now() < deadline) {
      const { value } = await rpc
        .getSignatureStatuses([signature])
        .send()
        .catch((error: unknown) => {
          throw toChainError(error);
        });
      const status = value[0];
      if (status?.err != null) {
        throw new ChainError('rejected', `opening the token account failed: ${JSON.stringify(status.err)}`);
      }
      if (status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized') {
        return { account: state.account, exists: true, signature };
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new ChainError(
      'unavailable',
      `the transaction opening the token account was not confirmed: ${signature}`,
    );
  } finally {
    secretKey.fill(0);
  }
}
