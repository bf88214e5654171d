import {
  AccountRole,
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getTransactionEncoder,
  type Instruction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import {
  getSetComputeUnitLimitInstruction,
  getSetComputeUnitPriceInstruction,
} from '@solana-program/compute-budget';
import { getAddMemoInstruction } from '@solana-program/memo';
import {
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
} from '@solana-program/token';

/**
 * A token transfer between two wallets' associated token accounts, as gate402 builds it on Solana:
 * compute-unit limit and price, the recipient's associated token account opened first when it does not
 * exist yet (CreateIdempotent, paid by the sender: it cannot fail on an account opened meanwhile),
 * TransferChecked (the mint and its decimals are checked by the token program, so a transaction built
 * for one token can never move another), the optional read-only reference on the transfer (Solana Pay's
 * convention; the token programs ignore accounts after the owner of a non-multisig source) and the memo.
 * Works for SPL Token and Token-2022 alike: the instructions are the same, only the program differs.
 */
export interface TokenTransferShape {
  /** The sender's wallet: fee payer and owner of `source`. */
  readonly from: Address;
  /** The recipient's wallet: owner of `destination`. */
  readonly to: Address;
  readonly source: Address;
  readonly destination: Address;
  readonly mint: Address;
  readonly tokenProgram: Address;
  readonly decimals: number;
  readonly amount: bigint;
  /** Opens `destination` for `to` first, the sender paying its rent. */
  readonly openDestination: boolean;
  readonly reference?: string | undefined;
  readonly memo?: string | undefined;
  readonly memoProgram: Address;
  readonly blockhash: { readonly blockhash: Blockhash; readonly lastValidBlockHeight: bigint };
  readonly computeUnitLimit: number;
  /** Micro-lamports per compute unit; 0 leaves the price instruction out. */
  readonly computeUnitPrice: bigint;
}

/** The unsigned wire transaction, with its one (fee payer's) signature slot empty. */
export function compileTokenTransfer(shape: TokenTransferShape): Uint8Array {
  const sender = createNoopSigner(shape.from);
  const transfer = getTransferCheckedInstruction(
    {
      source: shape.source,
      mint: shape.mint,
      destination: shape.destination,
      authority: sender,
      amount: shape.amount,
      decimals: shape.decimals,
    },
    { programAddress: shape.tokenProgram },
  );
  const instructions: Instruction[] = [
    getSetComputeUnitLimitInstruction({ units: shape.computeUnitLimit }),
    ...(shape.computeUnitPrice > 0n
      ? [getSetComputeUnitPriceInstruction({ microLamports: shape.computeUnitPrice })]
      : []),
    ...(shape.openDestination
      ? [
          getCreateAssociatedTokenIdempotentInstruction({
            payer: sender,
            ata: shape.destination,
            owner: shape.to,
            mint: shape.mint,
            tokenProgram: shape.tokenProgram,
          }),
        ]
      : []),
    shape.reference === undefined
      ? transfer
      : {
          ...transfer,
          accounts: [...transfer.accounts, { address: address(shape.reference), role: AccountRole.READONLY }],
        },
    ...(shape.memo === undefined
      ? []
      : [getAddMemoInstruction({ memo: shape.memo }, { programAddress: shape.memoProgram })]),
  ];
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(shape.from, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(shape.blockhash, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return new Uint8Array(getTransactionEncoder().encode(compileTransaction(message)));
}
