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
