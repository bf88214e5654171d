import { createHash } from 'node:crypto';
import {
  AccountRole,
  type Address,
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  type Instruction,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { getCreateAccountInstruction } from '@solana-program/system';
import {
  findAssociatedTokenPda,
  getCloseAccountInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeMint2Instruction,
  getMintToInstruction,
} from '@solana-program/token';

export const TOKEN_2022 = address('TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb');

/** Mint (82) padded to an account (165), account type (1), MetadataPointer TLV (4 + 64). */
const MINT_WITH_POINTER_SIZE = 165 + 1 + 4 + 64;

/**
 * A Token-2022 mint whose metadata lives in the mint itself (MetadataPointer → itself, TokenMetadata),
 * built by hand: the Token-2022 JS client on npm does not support @solana/kit 8 yet.
 */
export async function createToken2022WithMetadata(
  rpcUrl: string,
  payer: KeyPairSigner,
  meta: { name: string; symbol: string; uri: string; decimals: number },
  confirm: () => void,
): Promise<{ mint: Address; authority: KeyPairSigner }> {
  const rpc = createSolanaRpc(rpcUrl);
  const mint = await generateKeyPairSigner();
  const authority = payer;
  const strings = [meta.name, meta.symbol, meta.uri].map((s) => Buffer.from(s, 'utf8'));
  const metadataValue = 32 + 32 + strings.reduce((n, s) => n + 4 + s.length, 0) + 4;
  const fullSize = MINT_WITH_POINTER_SIZE + 4 + metadataValue;
  const lamports = await rpc.getMinimumBalanceForRentExemption(BigInt(fullSize)).send();
  const addr = getAddressEncoder();

  const pointer: Instruction = {
    programAddress: TOKEN_2022,
    accounts: [{ address: mint.address, role: AccountRole.WRITABLE }],
    // MetadataPointerExtension (39), Initialize (0), authority, metadata address (the mint itself).
    data: Buffer.concat([
      Buffer.of(39, 0),
      Buffer.from(addr.encode(authority.address)),
      Buffer.from(addr.encode(mint.address)),
    ]),
  };
  const initializeMetadata: Instruction = {
    programAddress: TOKEN_2022,
    accounts: [
      { address: mint.address, role: AccountRole.WRITABLE },
      { address: authority.address, role: AccountRole.READONLY },
      { address: mint.address, role: AccountRole.READONLY },
      { address: authority.address, role: AccountRole.READONLY_SIGNER },
    ],
    data: Buffer.concat([
      createHash('sha256').update('spl_token_metadata_interface:initialize_account').digest().subarray(0, 8),
      ...strings.flatMap((s) => [u32(s.length), s]),
    ]),
  };
  await send(rpc, payer, [
    getCreateAccountInstruction({
      payer,
      newAccount: mint,
      lamports,
      space: MINT_WITH_POINTER_SIZE,
      programAddress: TOKEN_2022,
    }),
    pointer,
    getInitializeMint2Instruction(
      {
        mint: mint.address,
        decimals: meta.decimals,
        mintAuthority: authority.address,
        freezeAuthority: null,
      },
      { programAddress: TOKEN_2022 },
    ),
    initializeMetadata,
  ]);
  confirm();
  return { mint: mint.address, authority };
}

/** Mints `amount` atomic units of a Token-2022 mint to `owner`'s associated token account. */
export async function mintToken2022(
  rpcUrl: string,
  authority: KeyPairSigner,
  mint: Address,
  owner: Address,
  amount: bigint,
): Promise<Address> {
  const rpc = createSolanaRpc(rpcUrl);
  const [ata] = await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_2022 });
  await send(rpc, authority, [
    getCreateAssociatedTokenIdempotentInstruction({
      payer: authority,
      ata,
      owner,
      mint,
      tokenProgram: TOKEN_2022,
    }),
    getMintToInstruction(
      { mint, token: ata, mintAuthority: authority, amount },
      { programAddress: TOKEN_2022 },
    ),
  ]);
  return ata;
}

/**
 * A Token-2022 token account of `owner` (its associated one, 0 tokens) whose mint was then closed:
 * MintCloseAuthority lets the mint's authority close it at zero supply; anyone may open the account.
 */
export async function openClosedMintAccount(
  rpcUrl: string,
  payer: KeyPairSigner,
  owner: Address,
  confirm: () => void,
): Promise<{ mint: Address; account: Address }> {
  const rpc = createSolanaRpc(rpcUrl);
  const mint = await generateKeyPairSigner();
  const [account] = await findAssociatedTokenPda({ owner, mint: mint.address, tokenProgram: TOKEN_2022 });
  /** Mint (82) padded to an account (165), account type (1), MintCloseAuthority TLV (4 + 32). */
  const space = 165 + 1 + 4 + 32;
  const closeAuthority: Instruction = {
    programAddress: TOKEN_2022,
    accounts: [{ address: mint.address, role: AccountRole.WRITABLE }],
    // InitializeMintCloseAuthority (25), Some(payer).
    data: Buffer.concat([Buffer.of(25, 1), Buffer.from(getAddressEncoder().encode(payer.address))]),
  };
  await send(rpc, payer, [
    getCreateAccountInstruction({
      payer,
      newAccount: mint,
      lamports: await rpc.getMinimumBalanceForRentExemption(BigInt(space)).send(),
      space,
      programAddress: TOKEN_2022,
    }),
    closeAuthority,
    getInitializeMint2Instruction(
      { mint: mint.address, decimals: 3, mintAuthority: payer.address, freezeAuthority: null },
      { programAddress: TOKEN_2022 },
    ),
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: account,
      owner,
      mint: mint.address,
      tokenProgram: TOKEN_2022,
    }),
  ]);
  confirm();
  await send(rpc, payer, [
    getCloseAccountInstruction(
      { account: mint.address, destination: payer.address, owner: payer },
      { programAddress: TOKEN_2022 },
    ),
  ]);
  confirm();
  return { mint: mint.address, account };
}

/** Token-2022 mint extensions that restrict transfers, as gate402 refuses them for sends. */
export type RestrictingExtension =
  | 'transfer-fee'
  | 'transfer-hook'
  | 'permanent-delegate'
  | 'non-transferable';

/**
 * A Token-2022 mint (6 decimals, `payer` its mint authority) with one extension that restricts transfers,
 * initialized by its own instruction before InitializeMint2, as spl-token does:
 * - transfer-fee: TransferFeeExtension (26) InitializeTransferFeeConfig, 1 % up to 1 token;
 * - transfer-hook: TransferHookExtension (36) Initialize, naming the Memo program as the hook;
 * - permanent-delegate: InitializePermanentDelegate (35), the payer as delegate;
 * - non-transferable: InitializeNonTransferableMint (32).
 */
export async function createRestrictedToken2022(
  rpcUrl: string,
  payer: KeyPairSigner,
  extension: RestrictingExtension,
  confirm: () => void,
): Promise<Address> {
  const rpc = createSolanaRpc(rpcUrl);
  const mint = await generateKeyPairSigner();
  const key = (a: Address) => Buffer.from(getAddressEncoder().encode(a));
  const { length, data } = {
    'transfer-fee': {
      length: 108,
      data: Buffer.concat([
        Buffer.of(26, 0, 1),
        key(payer.address),
        Buffer.of(1),
        key(payer.address),
        u16(100),
        u64(1_000_000n),
      ]),
    },
    'transfer-hook': {
      length: 64,
      data: Buffer.concat([
        Buffer.of(36, 0),
        key(payer.address),
        key(address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr')),
      ]),
    },
    'permanent-delegate': { length: 32, data: Buffer.concat([Buffer.of(35), key(payer.address)]) },
    'non-transferable': { length: 0, data: Buffer.of(32) },
  }[extension];
  // Mint (82) padded to an account (165), account type (1), the extension's TLV (4 + its length).
  const space = 165 + 1 + 4 + length;
  await send(rpc, payer, [
    getCreateAccountInstruction({
      payer,
      newAccount: mint,
      lamports: await rpc.getMinimumBalanceForRentExemption(BigInt(space)).send(),
      space,
      programAddress: TOKEN_2022,
    }),
    {
      programAddress: TOKEN_2022,
      accounts: [{ address: mint.address, role: AccountRole.WRITABLE }],
      data,
    },
    getInitializeMint2Instruction(
      { mint: mint.address, decimals: 6, mintAuthority: payer.address, freezeAuthority: null },
      { programAddress: TOKEN_2022 },
    ),
  ]);
  confirm();
  return mint.address;
}

async function send(
  rpc: ReturnType<typeof createSolanaRpc>,
  payer: KeyPairSigner,
  instructions: Instruction[],
): Promise<void> {
  const { value: blockhash } = await rpc.getLatestBlockhash().send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const signed = await signTransactionMessageWithSigners(message);
  await rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64' }).send();
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
}

function u64(n: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return b;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}
