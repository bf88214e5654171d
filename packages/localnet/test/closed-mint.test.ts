// A Token-2022 mint closed (MintCloseAuthority, at zero supply) and opened again at its address with
// other decimals: what the chain answers about its token accounts follows the mint as it is now.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  type Instruction,
  type KeyPairSigner,
  pipe,
  type Signature,
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
import { parseTokenExtensions } from '../src/rpc/token-extensions.ts';
import { encodeBase58 } from '../src/wire/base58.ts';
import { fundedSigner, type Harness, rawCall, startHarness, wireBase64 } from './support/fixture.ts';

const TOKEN_2022 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb' as Address;
/** Mint (82) padded to an account (165), account type (1), MintCloseAuthority TLV (4 + 32). */
const MINT_WITH_CLOSE_AUTHORITY = 165 + 1 + 4 + 32;

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

async function send(payer: KeyPairSigner, instructions: Instruction[]): Promise<Signature> {
  const { value: lifetime } = await h.rpc.getLatestBlockhash({ commitment: 'processed' }).send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const signed = await signTransactionMessageWithSigners(message);
  const signature = await h.rpc.sendTransaction(wireBase64(signed), { encoding: 'base64' }).send();
  h.localnet.advanceSlots(1);
  return signature;
}

/** Creates the mint account `mint` (Token-2022, closable by `authority`) and initialises it with `decimals`. */
async function openMint(payer: KeyPairSigner, mint: KeyPairSigner, decimals: number): Promise<Instruction[]> {
  const closeAuthority: Instruction = {
    programAddress: TOKEN_2022,
    accounts: [{ address: mint.address, role: AccountRole.WRITABLE }],
    // InitializeMintCloseAuthority (25), Some(payer).
    data: Buffer.concat([Buffer.of(25, 1), Buffer.from(getAddressEncoder().encode(payer.address))]),
  };
  return [
    getCreateAccountInstruction({
      payer,
      newAccount: mint,
      lamports: await h.rpc.getMinimumBalanceForRentExemption(BigInt(MINT_WITH_CLOSE_AUTHORITY)).send(),
      space: MINT_WITH_CLOSE_AUTHORITY,
      programAddress: TOKEN_2022,
    }),
    closeAuthority,
    getInitializeMint2Instruction(
      { mint: mint.address, decimals, mintAuthority: payer.address, freezeAuthority: null },
      { programAddress: TOKEN_2022 },
    ),
  ];
}

test('a mint closed and opened again at its address with other decimals is read with its new decimals', async () => {
  const payer = await fundedSigner(h.localnet);
  const owner = (await generateKeyPairSigner()).address;
  const mint = await generateKeyPairSigner();
  const [account] = await findAssociatedTokenPda({ owner, mint: mint.address, tokenProgram: TOKEN_2022 });
  await send(payer, [
    ...(await openMint(payer, mint, 3)),
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: account,
      owner,
      mint: mint.address,
      tokenProgram: TOKEN_2022,
    }),
  ]);
  const balance = async () => {
    // processed: reads at the default commitment (finalized) lag the open slot.
    const { result, error } = await rawCall(h.localnet.rpcUrl, 'getTokenAccountBalance', [
      account,
      { commitment: 'processed' },
    ]);
    return { value: (result as { value?: Record<string, unknown> } | undefined)?.value, error };
  };
  assert.equal((await balance()).value?.decimals, 3);

  // Closed: no mint, so no decimals (Agave: "could not find mint"), not those of the mint that was.
  await send(payer, [
    getCloseAccountInstruction(
      { account: mint.address, destination: payer.address, owner: payer },
      { programAddress: TOKEN_2022 },
    ),
  ]);
  assert.deepEqual((await balance()).error, {
    code: -32602,
    message: 'Invalid param: could not find mint',
  });

  // Opened again, with 9 decimals: the token account's balance and a transaction's token balances say 9.
  const minted = await send(payer, [
    ...(await openMint(payer, mint, 9)),
    getMintToInstruction(
      { mint: mint.address, token: account, mintAuthority: payer, amount: 5_000_000_000n },
      { programAddress: TOKEN_2022 },
    ),
  ]);
  assert.deepEqual((await balance()).value, {
    amount: '5000000000',
    decimals: 9,
    uiAmount: 5,
    uiAmountString: '5',
  });
  const tx = await h.rpc
    .getTransaction(minted, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, encoding: 'json' })
    .send();
  const tokenBalances = tx?.meta?.postTokenBalances?.filter((b) => b.mint === mint.address) ?? [];
  assert.deepEqual(
    tokenBalances.map((b) => [b.uiTokenAmount.amount, b.uiTokenAmount.decimals]),
    [['5000000000', 9]],
  );
});

test('jsonParsed Token-2022 mints and accounts list their extensions as Agave does', async () => {
  const payer = await fundedSigner(h.localnet);
  const owner = (await generateKeyPairSigner()).address;
  const mint = await generateKeyPairSigner();
  const [account] = await findAssociatedTokenPda({ owner, mint: mint.address, tokenProgram: TOKEN_2022 });
  await send(payer, [
    ...(await openMint(payer, mint, 6)),
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: account,
      owner,
      mint: mint.address,
      tokenProgram: TOKEN_2022,
    }),
  ]);
  const parsedInfo = async (address: string) =>
    (
      (
        await rawCall(h.localnet.rpcUrl, 'getAccountInfo', [
          address,
          { encoding: 'jsonParsed', commitment: 'confirmed' },
        ])
      ).result as { value: { data: { program: string; parsed: { info: Record<string, unknown> } } } }
    ).value.data;
  const mintData = await parsedInfo(mint.address);
  assert.equal(mintData.program, 'spl-token-2022');
  assert.deepEqual(mintData.parsed.info.extensions, [
    { extension: 'mintCloseAuthority', state: { closeAuthority: payer.address } },
  ]);
  // The associated token program gives every Token-2022 account ImmutableOwner.
  assert.deepEqual((await parsedInfo(account)).parsed.info.extensions, [{ extension: 'immutableOwner' }]);
  // A classic SPL Token account has no extensions field at all.
  const usdc = await h.localnet.mintUsdc(owner, 1n);
  h.localnet.advanceSlots(1);
  assert.equal('extensions' in (await parsedInfo(usdc.tokenAccount)).parsed.info, false);
});

test('Token-2022 TLV entries: transfer fee config, token metadata, a wrong-size value, a padding end; an unknown type', async () => {
  const key = (fill: number) => Buffer.alloc(32, fill);
  const u64 = (n: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(n);
    return b;
  };
  const u16 = (n: number) => {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(n);
    return b;
  };
  const str = (s: string) => Buffer.concat([Buffer.from([s.length, 0, 0, 0]), Buffer.from(s)]);
  const tlv = (type: number, value: Buffer) => Buffer.concat([u16(type), u16(value.length), value]);
  const fee = (epoch: bigint, max: bigint, bps: number) => Buffer.concat([u64(epoch), u64(max), u16(bps)]);
  const data = Buffer.concat([
    Buffer.alloc(165),
    Buffer.of(1), // mint
    tlv(1, Buffer.concat([key(0), key(7), u64(12n), fee(1n, 5000n, 50), fee(2n, 6000n, 75)])),
    tlv(
      19,
      Buffer.concat([
        key(9),
        key(3),
        str('Coin'),
        str('C'),
        str('https://x'),
        Buffer.of(1, 0, 0, 0),
        str('k'),
        str('v'),
      ]),
    ),
    tlv(3, Buffer.of(1, 2, 3)), // MintCloseAuthority is 32 bytes: unparseable
    Buffer.alloc(8), // padding: type 0, length 0
  ]);
  assert.deepEqual(parseTokenExtensions(data), [
    {
      extension: 'transferFeeConfig',
      state: {
        transferFeeConfigAuthority: null,
        withdrawWithheldAuthority: encodeBase58(key(7)),
        withheldAmount: 12n,
        olderTransferFee: { epoch: 1n, maximumFee: 5000n, transferFeeBasisPoints: 50 },
        newerTransferFee: { epoch: 2n, maximumFee: 6000n, transferFeeBasisPoints: 75 },
      },
    },
    {
      extension: 'tokenMetadata',
      state: {
        updateAuthority: encodeBase58(key(9)),
        mint: encodeBase58(key(3)),
        name: 'Coin',
        symbol: 'C',
        uri: 'https://x',
        additionalMetadata: [['k', 'v']],
      },
    },
    { extension: 'unparseableExtension' },
  ]);
  // A type Agave's decoder does not know makes get_extension_types() fail: no extensions at all,
  // as does a value that runs past the end of the data.
  const unknown = Buffer.concat([data.subarray(0, 166), tlv(99, Buffer.of(1, 2, 3)), data.subarray(166)]);
  assert.deepEqual(parseTokenExtensions(unknown), []);
  const truncated = Buffer.concat([data.subarray(0, 166), u16(3), u16(32), key(1).subarray(0, 10)]);
  assert.deepEqual(parseTokenExtensions(truncated), []);
});
