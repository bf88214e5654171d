// @solana/spl-token 0.4 (a stock client no one here wrote) against the localnet: what wallets and apps do
// with SPL Token and Token-2022 — mints with extensions, associated token accounts, transfers, delegation,
// burns, closes, wrapped SOL — and the jsonParsed answers they read, checked against Agave's shapes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  AccountState,
  AuthorityType,
  amountToUiAmount,
  approve,
  approveChecked,
  burn,
  burnChecked,
  closeAccount,
  createAccount,
  createAssociatedTokenAccountIdempotent,
  createAssociatedTokenAccountIdempotentInstruction,
  createEnableRequiredMemoTransfersInstruction,
  createInitializeDefaultAccountStateInstruction,
  createInitializeInterestBearingMintInstruction,
  createInitializeMetadataPointerInstruction,
  createInitializeMint2Instruction,
  createInitializeMintCloseAuthorityInstruction,
  createInitializeNonTransferableMintInstruction,
  createInitializePausableConfigInstruction,
  createInitializePermanentDelegateInstruction,
  createInitializeScaledUiAmountConfigInstruction,
  createInitializeTransferFeeConfigInstruction,
  createMint,
  createMintToInstruction,
  createMultisig,
  createSyncNativeInstruction,
  createTransferCheckedInstruction,
  createWrappedNativeAccount,
  ExtensionType,
  freezeAccount,
  getAccount,
  getAccountLen,
  getAssociatedTokenAddressSync,
  getExtensionTypes,
  getMetadataPointerState,
  getMint,
  getMintCloseAuthority,
  getMintLen,
  getOrCreateAssociatedTokenAccount,
  getTokenMetadata,
  getTransferFeeAmount,
  getTransferFeeConfig,
  mintTo,
  mintToChecked,
  NATIVE_MINT,
  NATIVE_MINT_2022,
  pause,
  revoke,
  setAuthority,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
  TokenAccountNotFoundError,
  thawAccount,
  tokenMetadataInitializeWithRentTransfer,
  tokenMetadataUpdateFieldWithRentTransfer,
  transfer,
  transferChecked,
  transferCheckedWithFee,
  unpackAccount,
  updateMultiplier,
  withdrawWithheldTokensFromAccounts,
} from '@solana/spl-token';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  type ParsedAccountData,
  type PublicKey,
  SendTransactionError,
  SystemProgram,
  sendAndConfirmTransaction,
  Transaction,
  TransactionInstruction,
} from '@solana/web3.js';
import { type Localnet, startLocalnet } from '../src/index.ts';
import { parseTokenExtensions } from '../src/rpc/token-extensions.ts';
import { rawCall } from './support/fixture.ts';

/** Agave's rent: (128 + space) × 3,480 lamports/byte-year × 2 years. */
const rentExempt = (space: number) => (128 + space) * 3480 * 2;
const MINT_RENT = rentExempt(82); // 1,461,600
const TOKEN_ACCOUNT_RENT = rentExempt(165); // 2,039,280

let localnet: Localnet;
let connection: Connection;
let payer: Keypair;

before(async () => {
  localnet = await startLocalnet({ port: 0, slotMs: 25, finalizedDepth: 3 });
  connection = new Connection(localnet.rpcUrl, { commitment: 'confirmed', wsEndpoint: localnet.wsUrl });
  payer = Keypair.generate();
  localnet.airdrop(payer.publicKey.toBase58(), 100n * BigInt(LAMPORTS_PER_SOL));
});
after(() => localnet.close());

interface UiExtensionJson {
  extension: string;
  state?: Record<string, unknown>;
}
interface ParsedTokenData {
  program: string;
  space: number;
  parsed: { type: string; info: Record<string, unknown> & { extensions?: UiExtensionJson[] } };
}

function parsed(data: unknown): ParsedTokenData {
  assert.ok(data && typeof data === 'object' && 'parsed' in data, `not jsonParsed: ${JSON.stringify(data)}`);
  return data as ParsedAccountData as never;
}

async function parsedInfo(address: PublicKey) {
  const info = await connection.getParsedAccountInfo(address);
  assert.ok(info.value, `no account ${address.toBase58()}`);
  return { account: info.value, data: parsed(info.value.data) };
}

/** A transaction's outer instructions as getParsedTransaction answers them: [program, type, info]. */
async function outerInstructions(signature: string): Promise<unknown[][]> {
  const tx = await connection.getParsedTransaction(signature, { maxSupportedTransactionVersion: 0 });
  assert.ok(tx, `no transaction ${signature}`);
  return tx.transaction.message.instructions.map((ix) =>
    'parsed' in ix ? [ix.program, ix.parsed.type, ix.parsed.info] : ['unparsed', ix.programId.toBase58()],
  );
}

/** The first transaction that named `address` (its creation). */
async function firstSignature(address: PublicKey): Promise<string> {
  return (await connection.getSignaturesForAddress(address, undefined, 'confirmed')).at(-1)?.signature ?? '';
}

describe('SPL Token (Tokenkeg…)', () => {
  const owner = Keypair.generate();
  const other = Keypair.generate();
  const delegate = Keypair.generate();
  const mintAuthority = Keypair.generate();
  const freezeAuthority = Keypair.generate();
  let mint: PublicKey;
  let ownerAta: PublicKey;
  let otherAta: PublicKey;

  test('createMint and getMint: an 82-byte mint owned by the token program, rent exempt', async () => {
    mint = await createMint(connection, payer, mintAuthority.publicKey, freezeAuthority.publicKey, 6);
    const state = await getMint(connection, mint);
    assert.ok(state.address.equals(mint));
    assert.ok(state.mintAuthority?.equals(mintAuthority.publicKey));
    assert.ok(state.freezeAuthority?.equals(freezeAuthority.publicKey));
    assert.equal(state.supply, 0n);
    assert.equal(state.decimals, 6);
    assert.equal(state.isInitialized, true);
    assert.equal(state.tlvData.length, 0);

    const { account, data } = await parsedInfo(mint);
    assert.equal(account.lamports, MINT_RENT);
    assert.ok(account.owner.equals(TOKEN_PROGRAM_ID));
    assert.equal(data.program, 'spl-token');
    assert.equal(data.space, 82);
    // Agave's UiMint: no `extensions` key when there are none.
    assert.deepEqual(data.parsed, {
      type: 'mint',
      info: {
        mintAuthority: mintAuthority.publicKey.toBase58(),
        supply: '0',
        decimals: 6,
        isInitialized: true,
        freezeAuthority: freezeAuthority.publicKey.toBase58(),
      },
    });
  });

  test('getOrCreateAssociatedTokenAccount creates the ATA once, then finds it', async () => {
    const created = await getOrCreateAssociatedTokenAccount(connection, payer, mint, owner.publicKey);
    ownerAta = created.address;
    assert.ok(ownerAta.equals(getAssociatedTokenAddressSync(mint, owner.publicKey)));
    assert.ok(created.owner.equals(owner.publicKey));
    assert.ok(created.mint.equals(mint));
    assert.equal(created.amount, 0n);
    assert.equal(created.isInitialized, true);
    assert.equal(created.isFrozen, false);
    assert.equal(created.isNative, false);
    assert.equal(created.delegate, null);
    assert.equal(created.closeAuthority, null);

    const before = await connection.getBalance(payer.publicKey);
    const again = await getOrCreateAssociatedTokenAccount(connection, payer, mint, owner.publicKey);
    assert.ok(again.address.equals(ownerAta));
    // Found, not created: no transaction, no fee.
    assert.equal(await connection.getBalance(payer.publicKey), before);
    assert.equal(await connection.getBalance(ownerAta), TOKEN_ACCOUNT_RENT);

    otherAta = await createAssociatedTokenAccountIdempotent(connection, payer, mint, other.publicKey);
    assert.ok(otherAta.equals(getAssociatedTokenAddressSync(mint, other.publicKey)));
  });

  test('getAccount of a missing token account throws TokenAccountNotFoundError', async () => {
    await assert.rejects(getAccount(connection, Keypair.generate().publicKey), TokenAccountNotFoundError);
  });

  test('mintTo, mintToChecked, transfer and transferChecked move exact amounts', async () => {
    await mintTo(connection, payer, mint, ownerAta, mintAuthority, 5_000_000n);
    await mintToChecked(connection, payer, mint, ownerAta, mintAuthority, 1_000_000n, 6);
    assert.equal((await getAccount(connection, ownerAta)).amount, 6_000_000n);
    assert.equal((await getMint(connection, mint)).supply, 6_000_000n);

    const signature = await transfer(connection, payer, ownerAta, otherAta, owner, 1_250_000n);
    await transferChecked(connection, payer, ownerAta, mint, otherAta, owner, 250_000n, 6);
    assert.equal((await getAccount(connection, ownerAta)).amount, 4_500_000n);
    assert.equal((await getAccount(connection, otherAta)).amount, 1_500_000n);

    // The transfer as an explorer reads it: parsed spl-token instruction and token balances.
    const tx = await connection.getParsedTransaction(signature, { maxSupportedTransactionVersion: 0 });
    assert.ok(tx?.meta);
    const instruction = tx.transaction.message.instructions[0];
    assert.ok(instruction && 'parsed' in instruction);
    assert.equal(instruction.program, 'spl-token');
    assert.deepEqual(instruction.parsed, {
      type: 'transfer',
      info: {
        source: ownerAta.toBase58(),
        destination: otherAta.toBase58(),
        authority: owner.publicKey.toBase58(),
        amount: '1250000',
      },
    });
    const post = tx.meta.postTokenBalances?.map((b) => [b.owner, b.mint, b.programId, b.uiTokenAmount]);
    assert.deepEqual(
      post?.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      [
        [
          owner.publicKey.toBase58(),
          mint.toBase58(),
          TOKEN_PROGRAM_ID.toBase58(),
          { amount: '4750000', decimals: 6, uiAmount: 4.75, uiAmountString: '4.75' },
        ],
        [
          other.publicKey.toBase58(),
          mint.toBase58(),
          TOKEN_PROGRAM_ID.toBase58(),
          { amount: '1250000', decimals: 6, uiAmount: 1.25, uiAmountString: '1.25' },
        ],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
  });

  test('simulateTransaction previews token balances: preTokenBalances, postTokenBalances, loadedAddresses', async () => {
    const { blockhash } = await connection.getLatestBlockhash();
    const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
      createTransferCheckedInstruction(ownerAta, mint, otherAta, owner.publicKey, 400_000n, 6),
    );
    tx.sign(payer, owner);
    const response = await rawCall(localnet.rpcUrl, 'simulateTransaction', [
      tx.serialize().toString('base64'),
      { encoding: 'base64', commitment: 'confirmed' },
    ]);
    const value = (response.result as { value: Record<string, unknown> }).value;
    assert.equal(value.err, null);
    assert.deepEqual(value.loadedAddresses, { writable: [], readonly: [] });
    const balances = (list: unknown) =>
      (list as { accountIndex: number; owner: string; uiTokenAmount: { amount: string } }[])
        .map((b) => [b.owner, b.uiTokenAmount.amount])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    const sorted = (rows: string[][]) => rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    assert.deepEqual(
      balances(value.preTokenBalances),
      sorted([
        [owner.publicKey.toBase58(), '4500000'],
        [other.publicKey.toBase58(), '1500000'],
      ]),
    );
    assert.deepEqual(
      balances(value.postTokenBalances),
      sorted([
        [owner.publicKey.toBase58(), '4100000'],
        [other.publicKey.toBase58(), '1900000'],
      ]),
    );
    // A simulation changes nothing.
    assert.equal((await getAccount(connection, ownerAta)).amount, 4_500_000n);
    const first = (value.preTokenBalances as Record<string, unknown>[])[0];
    assert.deepEqual(Object.keys(first ?? {}).sort(), [
      'accountIndex',
      'mint',
      'owner',
      'programId',
      'uiTokenAmount',
    ]);
  });

  test('a transfer beyond the balance is refused in preflight with the program logs', async () => {
    const error = await transfer(connection, payer, otherAta, ownerAta, other, 9_999_999_999n).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof SendTransactionError, String(error));
    // spl-token's custom error 1 is InsufficientFunds.
    assert.match(error.message, /custom program error: 0x1\b/);
    const logs = await error.getLogs(connection);
    assert.ok(logs.includes('Program log: Error: insufficient funds'), logs.join('\n'));
  });

  test('approve, a delegated transfer, and revoke', async () => {
    await approve(connection, payer, ownerAta, delegate.publicKey, owner, 700_000n);
    const approved = await getAccount(connection, ownerAta);
    assert.ok(approved.delegate?.equals(delegate.publicKey));
    assert.equal(approved.delegatedAmount, 700_000n);
    const { data } = await parsedInfo(ownerAta);
    assert.equal(data.parsed.info.delegate, delegate.publicKey.toBase58());
    assert.deepEqual(data.parsed.info.delegatedAmount, {
      amount: '700000',
      decimals: 6,
      uiAmount: 0.7,
      uiAmountString: '0.7',
    });

    await transfer(connection, payer, ownerAta, otherAta, delegate, 200_000n);
    const afterDelegated = await getAccount(connection, ownerAta);
    assert.equal(afterDelegated.amount, 4_300_000n);
    assert.equal(afterDelegated.delegatedAmount, 500_000n);

    await revoke(connection, payer, ownerAta, owner);
    const revoked = await getAccount(connection, ownerAta);
    assert.equal(revoked.delegate, null);
    assert.equal(revoked.delegatedAmount, 0n);
    // Agave leaves out `delegate` and `delegatedAmount` when there is no delegate.
    const { data: after } = await parsedInfo(ownerAta);
    assert.equal('delegate' in after.parsed.info, false);
    assert.equal('delegatedAmount' in after.parsed.info, false);
  });

  test('burn and burnChecked lower the balance and the supply', async () => {
    await burn(connection, payer, ownerAta, mint, owner, 300_000n);
    await burnChecked(connection, payer, ownerAta, mint, owner, 1_000_000n, 6);
    assert.equal((await getAccount(connection, ownerAta)).amount, 3_000_000n);
    assert.equal((await getMint(connection, mint)).supply, 4_700_000n);
    const supply = await connection.getTokenSupply(mint);
    assert.deepEqual(supply.value, {
      amount: '4700000',
      decimals: 6,
      uiAmount: 4.7,
      uiAmountString: '4.7',
    });
  });

  test('getTokenLargestAccounts: holders by amount, largest first, with ui amounts', async () => {
    const third = await createAccount(
      connection,
      payer,
      mint,
      Keypair.generate().publicKey,
      Keypair.generate(),
    );
    const largest = await connection.getTokenLargestAccounts(mint);
    assert.ok(largest.context.slot > 0);
    assert.deepEqual(
      largest.value.map((a) => ({ ...a, address: a.address.toBase58() })),
      [
        {
          address: ownerAta.toBase58(),
          amount: '3000000',
          decimals: 6,
          uiAmount: 3,
          uiAmountString: '3',
        },
        {
          address: otherAta.toBase58(),
          amount: '1700000',
          decimals: 6,
          uiAmount: 1.7,
          uiAmountString: '1.7',
        },
        { address: third.toBase58(), amount: '0', decimals: 6, uiAmount: 0, uiAmountString: '0' },
      ],
    );
  });

  test('getParsedTokenAccountsByOwner and getTokenAccountsByOwner, by mint and by program', async () => {
    const byMint = await connection.getParsedTokenAccountsByOwner(owner.publicKey, { mint });
    assert.equal(byMint.value.length, 1);
    const entry = byMint.value[0];
    assert.ok(entry);
    assert.ok(entry.pubkey.equals(ownerAta));
    assert.equal(entry.account.lamports, TOKEN_ACCOUNT_RENT);
    assert.deepEqual(parsed(entry.account.data), {
      program: 'spl-token',
      space: 165,
      parsed: {
        type: 'account',
        info: {
          mint: mint.toBase58(),
          owner: owner.publicKey.toBase58(),
          tokenAmount: { amount: '3000000', decimals: 6, uiAmount: 3, uiAmountString: '3' },
          state: 'initialized',
          isNative: false,
        },
      },
    });
    const byProgram = await connection.getTokenAccountsByOwner(owner.publicKey, {
      programId: TOKEN_PROGRAM_ID,
    });
    assert.deepEqual(
      byProgram.value.map((a) => a.pubkey.toBase58()),
      [ownerAta.toBase58()],
    );
    const decoded = unpackAccount(ownerAta, byProgram.value[0]?.account ?? null);
    assert.equal(decoded.amount, 3_000_000n);
    const none = await connection.getParsedTokenAccountsByOwner(owner.publicKey, {
      programId: TOKEN_2022_PROGRAM_ID,
    });
    assert.deepEqual(none.value, []);
  });

  test('a mint that is not one: getTokenAccountsByOwner with a missing mint is -32602', async () => {
    const response = await rawCall(localnet.rpcUrl, 'getTokenAccountsByOwner', [
      owner.publicKey.toBase58(),
      { mint: Keypair.generate().publicKey.toBase58() },
      { encoding: 'jsonParsed' },
    ]);
    assert.equal(response.error?.code, -32602);
    assert.equal(response.error?.message, 'Invalid param: could not find mint');
  });

  test('ui amounts as Agave computes them: amount as f64 / 10^decimals, none past 10^19', async () => {
    const holder = Keypair.generate().publicKey;
    const tiny = await createMint(connection, payer, payer.publicKey, null, 20);
    const tinyAta = await createAssociatedTokenAccountIdempotent(connection, payer, tiny, holder);
    await mintTo(connection, payer, tiny, tinyAta, payer, 12_345n);
    assert.deepEqual((await connection.getTokenAccountBalance(tinyAta)).value, {
      amount: '12345',
      decimals: 20,
      uiAmount: null,
      uiAmountString: '0.00000000000000012345',
    });
    const whole = await createMint(connection, payer, payer.publicKey, null, 9);
    const wholeAta = await createAssociatedTokenAccountIdempotent(connection, payer, whole, holder);
    const max = 18_446_744_073_709_551_615n;
    await mintTo(connection, payer, whole, wholeAta, payer, max);
    assert.deepEqual((await connection.getTokenSupply(whole)).value, {
      amount: max.toString(),
      decimals: 9,
      uiAmount: Number(max) / 1e9,
      uiAmountString: '18446744073.709551615',
    });
  });

  test('amountToUiAmount (a simulation that returns data) renders the amount', async () => {
    assert.equal(await amountToUiAmount(connection, payer, mint, 1_234_500n), '1.2345');
  });

  test('closeAccount: an empty account is closed and its rent goes to the destination', async () => {
    const holder = Keypair.generate();
    const ata = await createAssociatedTokenAccountIdempotent(connection, payer, mint, holder.publicKey);
    const destination = Keypair.generate().publicKey;
    await closeAccount(connection, payer, ata, destination, holder);
    assert.equal(await connection.getAccountInfo(ata), null);
    assert.equal(await connection.getBalance(destination), TOKEN_ACCOUNT_RENT);
    await assert.rejects(getAccount(connection, ata), TokenAccountNotFoundError);
  });
});

describe('instructions as explorers read them (getParsedTransaction, program "spl-token")', () => {
  /** The parsed outer instructions and the inner ones of a transaction, as [program, type, info]. */
  async function parsedInstructions(signature: string) {
    const tx = await connection.getParsedTransaction(signature, { maxSupportedTransactionVersion: 0 });
    assert.ok(tx?.meta, `no transaction ${signature}`);
    const shape = (ix: (typeof tx.transaction.message.instructions)[number]) =>
      'parsed' in ix ? [ix.program, ix.parsed.type, ix.parsed.info] : ['unparsed', ix.programId.toBase58()];
    return {
      outer: tx.transaction.message.instructions.map(shape),
      inner: (tx.meta.innerInstructions ?? []).flatMap((group) => group.instructions.map(shape)),
    };
  }
  const signatureOf = async (address: PublicKey) =>
    (await connection.getSignaturesForAddress(address, undefined, 'confirmed')).at(-1)?.signature ?? '';

  test("createMint, the ATA program's CPIs, setAuthority, freeze/thaw, approveChecked, a multisig transfer", async () => {
    const authority = Keypair.generate();
    const freezer = Keypair.generate();
    const mint = await createMint(connection, payer, authority.publicKey, freezer.publicKey, 3);
    const created = await parsedInstructions(await signatureOf(mint));
    assert.deepEqual(created.outer[1], [
      'spl-token',
      'initializeMint2',
      {
        mint: mint.toBase58(),
        decimals: 3,
        mintAuthority: authority.publicKey.toBase58(),
        freezeAuthority: freezer.publicKey.toBase58(),
      },
    ]);

    // The multisig owns an account; its transfer names the multisig and its signers.
    const [s1, s2, s3] = [Keypair.generate(), Keypair.generate(), Keypair.generate()];
    const multisig = await createMultisig(connection, payer, [s1.publicKey, s2.publicKey, s3.publicKey], 2);
    const { data: multisigData } = await parsedInfo(multisig);
    assert.deepEqual(multisigData, {
      program: 'spl-token',
      space: 355,
      parsed: {
        type: 'multisig',
        info: {
          numRequiredSigners: 2,
          numValidSigners: 3,
          isInitialized: true,
          signers: [s1.publicKey.toBase58(), s2.publicKey.toBase58(), s3.publicKey.toBase58()],
        },
      },
    });
    const ata = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint,
      multisig,
      { commitment: 'confirmed' },
      TOKEN_PROGRAM_ID,
      undefined,
      true,
    );
    const ataTx = await parsedInstructions(await signatureOf(ata));
    assert.deepEqual(
      ataTx.inner.map((ix) => ix.slice(0, 2)),
      [
        ['spl-token', 'getAccountDataSize'],
        ['system', 'createAccount'],
        ['spl-token', 'initializeImmutableOwner'],
        ['spl-token', 'initializeAccount3'],
      ],
    );
    // The ATA program asks for room for ImmutableOwner, whichever token program.
    assert.deepEqual(ataTx.inner[0]?.[2], { mint: mint.toBase58(), extensionTypes: ['immutableOwner'] });
    assert.deepEqual(ataTx.inner[3]?.[2], {
      account: ata.toBase58(),
      mint: mint.toBase58(),
      owner: multisig.toBase58(),
    });

    await mintTo(connection, payer, mint, ata, authority, 5_000n);
    const destination = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint,
      payer.publicKey,
    );
    const multisigTransfer = await transfer(connection, payer, ata, destination, multisig, 1_500n, [s1, s3]);
    assert.deepEqual((await parsedInstructions(multisigTransfer)).outer[0], [
      'spl-token',
      'transfer',
      {
        source: ata.toBase58(),
        destination: destination.toBase58(),
        amount: '1500',
        multisigAuthority: multisig.toBase58(),
        signers: [s1.publicKey.toBase58(), s3.publicKey.toBase58()],
      },
    ]);

    const delegate = Keypair.generate().publicKey;
    const approved = await approveChecked(connection, payer, mint, destination, delegate, payer, 700n, 3);
    assert.deepEqual((await parsedInstructions(approved)).outer[0], [
      'spl-token',
      'approveChecked',
      {
        source: destination.toBase58(),
        mint: mint.toBase58(),
        delegate: delegate.toBase58(),
        owner: payer.publicKey.toBase58(),
        tokenAmount: { amount: '700', decimals: 3, uiAmount: 0.7, uiAmountString: '0.7' },
      },
    ]);
    const revoked = await revoke(connection, payer, destination, payer);
    assert.deepEqual((await parsedInstructions(revoked)).outer[0], [
      'spl-token',
      'revoke',
      { source: destination.toBase58(), owner: payer.publicKey.toBase58() },
    ]);

    const frozen = await freezeAccount(connection, payer, destination, mint, freezer);
    assert.deepEqual((await parsedInstructions(frozen)).outer[0], [
      'spl-token',
      'freezeAccount',
      {
        account: destination.toBase58(),
        mint: mint.toBase58(),
        freezeAuthority: freezer.publicKey.toBase58(),
      },
    ]);
    assert.equal((await getAccount(connection, destination)).isFrozen, true);
    const thawed = await thawAccount(connection, payer, destination, mint, freezer);
    assert.equal((await parsedInstructions(thawed)).outer[0]?.[1], 'thawAccount');

    const handedOver = await setAuthority(connection, payer, mint, authority, AuthorityType.MintTokens, null);
    assert.deepEqual((await parsedInstructions(handedOver)).outer[0], [
      'spl-token',
      'setAuthority',
      {
        mint: mint.toBase58(),
        authorityType: 'mintTokens',
        newAuthority: null,
        authority: authority.publicKey.toBase58(),
      },
    ]);
    assert.equal((await getMint(connection, mint)).mintAuthority, null);
  });

  test('Token-2022: transfer-fee and close-authority instructions, parsed under "spl-token"', async () => {
    const mint = Keypair.generate();
    const extensions = [ExtensionType.TransferFeeConfig, ExtensionType.MintCloseAuthority];
    const space = getMintLen(extensions);
    const created = await sendAndConfirmTransaction(
      connection,
      new Transaction().add(
        SystemProgram.createAccount({
          fromPubkey: payer.publicKey,
          newAccountPubkey: mint.publicKey,
          space,
          lamports: rentExempt(space),
          programId: TOKEN_2022_PROGRAM_ID,
        }),
        createInitializeTransferFeeConfigInstruction(
          mint.publicKey,
          payer.publicKey,
          null,
          250,
          9_000n,
          TOKEN_2022_PROGRAM_ID,
        ),
        createInitializeMintCloseAuthorityInstruction(mint.publicKey, payer.publicKey, TOKEN_2022_PROGRAM_ID),
        createInitializeMint2Instruction(mint.publicKey, 2, payer.publicKey, null, TOKEN_2022_PROGRAM_ID),
      ),
      [payer, mint],
    );
    const { outer } = await parsedInstructions(created);
    assert.deepEqual(outer.slice(1), [
      [
        'spl-token',
        'initializeTransferFeeConfig',
        {
          mint: mint.publicKey.toBase58(),
          transferFeeConfigAuthority: payer.publicKey.toBase58(),
          transferFeeBasisPoints: 250,
          maximumFee: 9000,
        },
      ],
      [
        'spl-token',
        'initializeMintCloseAuthority',
        { mint: mint.publicKey.toBase58(), newAuthority: payer.publicKey.toBase58() },
      ],
      [
        'spl-token',
        'initializeMint2',
        { mint: mint.publicKey.toBase58(), decimals: 2, mintAuthority: payer.publicKey.toBase58() },
      ],
    ]);

    const holder = Keypair.generate();
    const source = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint.publicKey,
      payer.publicKey,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const destination = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint.publicKey,
      holder.publicKey,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    await mintTo(
      connection,
      payer,
      mint.publicKey,
      source,
      payer,
      10_000n,
      [],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const sent = await transferCheckedWithFee(
      connection,
      payer,
      source,
      mint.publicKey,
      destination,
      payer,
      4_000n,
      2,
      100n,
      [],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const tx = await connection.getParsedTransaction(sent, { maxSupportedTransactionVersion: 0 });
    const ix = tx?.transaction.message.instructions[0];
    assert.ok(ix && 'parsed' in ix);
    assert.ok(ix.programId.equals(TOKEN_2022_PROGRAM_ID));
    assert.equal(ix.program, 'spl-token');
    assert.deepEqual(ix.parsed, {
      type: 'transferCheckedWithFee',
      info: {
        source: source.toBase58(),
        mint: mint.publicKey.toBase58(),
        destination: destination.toBase58(),
        authority: payer.publicKey.toBase58(),
        tokenAmount: { amount: '4000', decimals: 2, uiAmount: 40, uiAmountString: '40' },
        feeAmount: { amount: '100', decimals: 2, uiAmount: 1, uiAmountString: '1' },
      },
    });
  });
});

describe('wrapped SOL', () => {
  test('createWrappedNativeAccount, syncNative after a SOL transfer, and closing to unwrap', async () => {
    const owner = Keypair.generate();
    localnet.airdrop(owner.publicKey.toBase58(), 5n * BigInt(LAMPORTS_PER_SOL));
    const wrapped = await createWrappedNativeAccount(connection, payer, owner.publicKey, LAMPORTS_PER_SOL);
    assert.ok(wrapped.equals(getAssociatedTokenAddressSync(NATIVE_MINT, owner.publicKey)));
    const account = await getAccount(connection, wrapped);
    assert.equal(account.isNative, true);
    assert.equal(account.rentExemptReserve, BigInt(TOKEN_ACCOUNT_RENT));
    assert.equal(account.amount, BigInt(LAMPORTS_PER_SOL));
    assert.equal(await connection.getBalance(wrapped), LAMPORTS_PER_SOL + TOKEN_ACCOUNT_RENT);

    // SOL sent to the account counts as tokens only after SyncNative.
    await sendAndConfirmTransaction(
      connection,
      new Transaction().add(
        SystemProgram.transfer({ fromPubkey: owner.publicKey, toPubkey: wrapped, lamports: 500_000_000 }),
      ),
      [owner],
    );
    assert.equal((await getAccount(connection, wrapped)).amount, BigInt(LAMPORTS_PER_SOL));
    await sendAndConfirmTransaction(connection, new Transaction().add(createSyncNativeInstruction(wrapped)), [
      payer,
    ]);
    assert.equal((await getAccount(connection, wrapped)).amount, 1_500_000_000n);

    const { data } = await parsedInfo(wrapped);
    assert.deepEqual(data.parsed.info, {
      mint: NATIVE_MINT.toBase58(),
      owner: owner.publicKey.toBase58(),
      tokenAmount: { amount: '1500000000', decimals: 9, uiAmount: 1.5, uiAmountString: '1.5' },
      state: 'initialized',
      isNative: true,
      rentExemptReserve: {
        amount: '2039280',
        decimals: 9,
        uiAmount: 0.00203928,
        uiAmountString: '0.00203928',
      },
    });
    const balance = await connection.getTokenAccountBalance(wrapped);
    assert.equal(balance.value.amount, '1500000000');

    const ownerBefore = await connection.getBalance(owner.publicKey);
    await closeAccount(connection, payer, wrapped, owner.publicKey, owner);
    assert.equal(await connection.getAccountInfo(wrapped), null);
    assert.equal(
      await connection.getBalance(owner.publicKey),
      ownerBefore + 1_500_000_000 + TOKEN_ACCOUNT_RENT,
    );
  });

  test('the native mints exist as on every cluster; Token-2022 wraps SOL with its own', async () => {
    for (const [nativeMint, program] of [
      [NATIVE_MINT, TOKEN_PROGRAM_ID],
      [NATIVE_MINT_2022, TOKEN_2022_PROGRAM_ID],
    ] as const) {
      const { account, data } = await parsedInfo(nativeMint);
      assert.ok(account.owner.equals(program));
      assert.equal(account.lamports, MINT_RENT);
      assert.deepEqual(data.parsed, {
        type: 'mint',
        info: { mintAuthority: null, supply: '0', decimals: 9, isInitialized: true, freezeAuthority: null },
      });
    }
    const owner = Keypair.generate();
    const wrapped = await createWrappedNativeAccount(
      connection,
      payer,
      owner.publicKey,
      250_000_000,
      undefined,
      undefined,
      TOKEN_2022_PROGRAM_ID,
      NATIVE_MINT_2022,
    );
    const account = await getAccount(connection, wrapped, 'confirmed', TOKEN_2022_PROGRAM_ID);
    assert.ok(account.mint.equals(NATIVE_MINT_2022));
    assert.equal(account.isNative, true);
    assert.equal(account.amount, 250_000_000n);
  });
});

/** Creates a Token-2022 mint with `extensions`, initialised by `init` before InitializeMint2. */
async function createMint2022(
  extensions: ExtensionType[],
  init: (mint: PublicKey) => TransactionInstruction[],
  options: {
    decimals?: number;
    authority?: Keypair;
    freeze?: PublicKey | null;
    extraSpace?: number;
    space?: number;
  } = {},
): Promise<PublicKey> {
  const mint = Keypair.generate();
  const space = options.space ?? getMintLen(extensions);
  const lamports = await connection.getMinimumBalanceForRentExemption(space + (options.extraSpace ?? 0));
  await sendAndConfirmTransaction(
    connection,
    new Transaction().add(
      SystemProgram.createAccount({
        fromPubkey: payer.publicKey,
        newAccountPubkey: mint.publicKey,
        space,
        lamports,
        programId: TOKEN_2022_PROGRAM_ID,
      }),
      ...init(mint.publicKey),
      createInitializeMint2Instruction(
        mint.publicKey,
        options.decimals ?? 6,
        (options.authority ?? payer).publicKey,
        options.freeze ?? null,
        TOKEN_2022_PROGRAM_ID,
      ),
    ),
    [payer, mint],
  );
  return mint.publicKey;
}

describe('Token-2022 (Tokenz…)', () => {
  test('createMint with the Token-2022 program: getMint and a plain jsonParsed mint', async () => {
    const mint = await createMint(
      connection,
      payer,
      payer.publicKey,
      null,
      9,
      undefined,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const state = await getMint(connection, mint, 'confirmed', TOKEN_2022_PROGRAM_ID);
    assert.equal(state.decimals, 9);
    assert.equal(state.freezeAuthority, null);
    const { account, data } = await parsedInfo(mint);
    assert.ok(account.owner.equals(TOKEN_2022_PROGRAM_ID));
    assert.equal(data.program, 'spl-token-2022');
    assert.equal(data.space, 82);
    assert.equal('extensions' in data.parsed.info, false);
    // Reading it with the wrong program is the client's TokenInvalidAccountOwnerError.
    await assert.rejects(
      getMint(connection, mint, 'confirmed', TOKEN_PROGRAM_ID),
      /TokenInvalidAccountOwnerError/,
    );
  });

  test('transfer fee mint: transferCheckedWithFee withholds the fee; extensions in jsonParsed', async () => {
    const feeAuthority = Keypair.generate();
    const mint = await createMint2022([ExtensionType.TransferFeeConfig], (m) => [
      createInitializeTransferFeeConfigInstruction(
        m,
        feeAuthority.publicKey,
        feeAuthority.publicKey,
        100, // 1 %
        5_000n,
        TOKEN_2022_PROGRAM_ID,
      ),
    ]);
    const state = await getMint(connection, mint, 'confirmed', TOKEN_2022_PROGRAM_ID);
    assert.deepEqual(getExtensionTypes(state.tlvData), [ExtensionType.TransferFeeConfig]);
    const config = getTransferFeeConfig(state);
    assert.equal(config?.newerTransferFee.transferFeeBasisPoints, 100);
    assert.equal(config?.newerTransferFee.maximumFee, 5_000n);

    const alice = Keypair.generate();
    const bob = Keypair.generate();
    const aliceAta = await getOrCreateAssociatedTokenAccount(
      connection,
      payer,
      mint,
      alice.publicKey,
      false,
      undefined,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const bobAta = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint,
      bob.publicKey,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    // An ATA of a transfer-fee mint carries ImmutableOwner (set first by the ATA program) and TransferFeeAmount.
    assert.deepEqual(getExtensionTypes(aliceAta.tlvData), [
      ExtensionType.ImmutableOwner,
      ExtensionType.TransferFeeAmount,
    ]);
    assert.equal(
      await connection.getBalance(aliceAta.address),
      rentExempt(getAccountLen([ExtensionType.TransferFeeAmount, ExtensionType.ImmutableOwner])),
    );

    await mintTo(
      connection,
      payer,
      mint,
      aliceAta.address,
      payer,
      1_000_000n,
      [],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    await transferCheckedWithFee(
      connection,
      payer,
      aliceAta.address,
      mint,
      bobAta,
      alice,
      100_000n,
      6,
      1_000n,
      [],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const bobAccount = await getAccount(connection, bobAta, 'confirmed', TOKEN_2022_PROGRAM_ID);
    assert.equal(bobAccount.amount, 99_000n);
    assert.equal(getTransferFeeAmount(bobAccount)?.withheldAmount, 1_000n);

    const { data: mintData } = await parsedInfo(mint);
    assert.equal(mintData.program, 'spl-token-2022');
    assert.deepEqual(mintData.parsed.info.extensions, [
      {
        extension: 'transferFeeConfig',
        state: {
          transferFeeConfigAuthority: feeAuthority.publicKey.toBase58(),
          withdrawWithheldAuthority: feeAuthority.publicKey.toBase58(),
          withheldAmount: 0,
          olderTransferFee: { epoch: 0, maximumFee: 5000, transferFeeBasisPoints: 100 },
          newerTransferFee: { epoch: 0, maximumFee: 5000, transferFeeBasisPoints: 100 },
        },
      },
    ]);
    const { data: bobData } = await parsedInfo(bobAta);
    assert.deepEqual(bobData.parsed.info, {
      mint: mint.toBase58(),
      owner: bob.publicKey.toBase58(),
      tokenAmount: { amount: '99000', decimals: 6, uiAmount: 0.099, uiAmountString: '0.099' },
      state: 'initialized',
      isNative: false,
      extensions: [
        { extension: 'immutableOwner' },
        { extension: 'transferFeeAmount', state: { withheldAmount: 1000 } },
      ],
    });

    // The withheld fee goes to the withdraw authority's choice of account.
    await withdrawWithheldTokensFromAccounts(
      connection,
      payer,
      mint,
      aliceAta.address,
      feeAuthority,
      [],
      [bobAta],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    assert.equal(
      (await getAccount(connection, aliceAta.address, 'confirmed', TOKEN_2022_PROGRAM_ID)).amount,
      901_000n,
    );
    const byOwner = await connection.getParsedTokenAccountsByOwner(bob.publicKey, {
      programId: TOKEN_2022_PROGRAM_ID,
    });
    assert.deepEqual(parsed(byOwner.value[0]?.account.data).parsed.info.extensions, [
      { extension: 'immutableOwner' },
      { extension: 'transferFeeAmount', state: { withheldAmount: 0 } },
    ]);
  });

  test('metadata pointer and token metadata: getTokenMetadata and jsonParsed tokenMetadata', async () => {
    const mint = await createMint2022([ExtensionType.MetadataPointer], (m) => [
      createInitializeMetadataPointerInstruction(m, payer.publicKey, m, TOKEN_2022_PROGRAM_ID),
    ]);
    const initialized = await tokenMetadataInitializeWithRentTransfer(
      connection,
      payer,
      mint,
      payer.publicKey,
      payer,
      'Gate Dollar',
      'GUSD',
      'https://example.invalid/gusd.json',
      [],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const updated = await tokenMetadataUpdateFieldWithRentTransfer(
      connection,
      payer,
      mint,
      payer,
      'issuer',
      'gate402',
      [],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    // The instructions as an explorer reads them.
    assert.deepEqual((await outerInstructions(await firstSignature(mint)))[1], [
      'spl-token',
      'initializeMetadataPointer',
      { mint: mint.toBase58(), authority: payer.publicKey.toBase58(), metadataAddress: mint.toBase58() },
    ]);
    assert.deepEqual((await outerInstructions(initialized)).at(-1), [
      'spl-token',
      'initializeTokenMetadata',
      {
        metadata: mint.toBase58(),
        updateAuthority: payer.publicKey.toBase58(),
        mint: mint.toBase58(),
        mintAuthority: payer.publicKey.toBase58(),
        name: 'Gate Dollar',
        symbol: 'GUSD',
        uri: 'https://example.invalid/gusd.json',
      },
    ]);
    assert.deepEqual((await outerInstructions(updated)).at(-1), [
      'spl-token',
      'updateTokenMetadataField',
      {
        metadata: mint.toBase58(),
        updateAuthority: payer.publicKey.toBase58(),
        field: 'issuer',
        value: 'gate402',
      },
    ]);
    const state = await getMint(connection, mint, 'confirmed', TOKEN_2022_PROGRAM_ID);
    assert.ok(getMetadataPointerState(state)?.metadataAddress?.equals(mint));
    const metadata = await getTokenMetadata(connection, mint, 'confirmed', TOKEN_2022_PROGRAM_ID);
    assert.equal(metadata?.name, 'Gate Dollar');
    assert.deepEqual(metadata?.additionalMetadata, [['issuer', 'gate402']]);

    const { data } = await parsedInfo(mint);
    assert.deepEqual(data.parsed.info.extensions, [
      {
        extension: 'metadataPointer',
        state: { authority: payer.publicKey.toBase58(), metadataAddress: mint.toBase58() },
      },
      {
        extension: 'tokenMetadata',
        state: {
          updateAuthority: payer.publicKey.toBase58(),
          mint: mint.toBase58(),
          name: 'Gate Dollar',
          symbol: 'GUSD',
          uri: 'https://example.invalid/gusd.json',
          additionalMetadata: [['issuer', 'gate402']],
        },
      },
    ]);
  });

  test('mint close authority: the mint closes at zero supply and is gone', async () => {
    const mint = await createMint2022([ExtensionType.MintCloseAuthority], (m) => [
      createInitializeMintCloseAuthorityInstruction(m, payer.publicKey, TOKEN_2022_PROGRAM_ID),
    ]);
    const state = await getMint(connection, mint, 'confirmed', TOKEN_2022_PROGRAM_ID);
    assert.ok(getMintCloseAuthority(state)?.closeAuthority.equals(payer.publicKey));
    const { data } = await parsedInfo(mint);
    assert.deepEqual(data.parsed.info.extensions, [
      { extension: 'mintCloseAuthority', state: { closeAuthority: payer.publicKey.toBase58() } },
    ]);
    const destination = Keypair.generate().publicKey;
    await closeAccount(connection, payer, mint, destination, payer, [], undefined, TOKEN_2022_PROGRAM_ID);
    assert.equal(await connection.getAccountInfo(mint), null);
    assert.equal(
      await connection.getBalance(destination),
      rentExempt(getMintLen([ExtensionType.MintCloseAuthority])),
    );
  });

  test('more mint extensions in jsonParsed: default state, interest, permanent delegate, non-transferable', async () => {
    const freeze = Keypair.generate().publicKey;
    const mint = await createMint2022(
      [
        ExtensionType.DefaultAccountState,
        ExtensionType.InterestBearingConfig,
        ExtensionType.PermanentDelegate,
        ExtensionType.NonTransferable,
      ],
      (m) => [
        createInitializeDefaultAccountStateInstruction(m, AccountState.Frozen, TOKEN_2022_PROGRAM_ID),
        createInitializeInterestBearingMintInstruction(m, payer.publicKey, 0, TOKEN_2022_PROGRAM_ID),
        createInitializePermanentDelegateInstruction(m, payer.publicKey, TOKEN_2022_PROGRAM_ID),
        createInitializeNonTransferableMintInstruction(m, TOKEN_2022_PROGRAM_ID),
      ],
      { freeze },
    );
    const { data } = await parsedInfo(mint);
    const extensions = data.parsed.info.extensions ?? [];
    assert.deepEqual(
      extensions.map((e) => e.extension),
      ['defaultAccountState', 'interestBearingConfig', 'permanentDelegate', 'nonTransferable'],
    );
    assert.deepEqual((await outerInstructions(await firstSignature(mint))).slice(1, 5), [
      ['spl-token', 'initializeDefaultAccountState', { mint: mint.toBase58(), accountState: 'frozen' }],
      [
        'spl-token',
        'initializeInterestBearingConfig',
        { mint: mint.toBase58(), rateAuthority: payer.publicKey.toBase58(), rate: 0 },
      ],
      [
        'spl-token',
        'initializePermanentDelegate',
        { mint: mint.toBase58(), delegate: payer.publicKey.toBase58() },
      ],
      ['spl-token', 'initializeNonTransferableMint', { mint: mint.toBase58() }],
    ]);
    assert.deepEqual(extensions[0]?.state, { accountState: 'frozen' });
    const interest = extensions[1]?.state ?? {};
    assert.equal(interest.rateAuthority, payer.publicKey.toBase58());
    assert.equal(interest.currentRate, 0);
    assert.equal(typeof interest.initializationTimestamp, 'number');
    assert.deepEqual(extensions[2]?.state, { delegate: payer.publicKey.toBase58() });
    assert.equal('state' in (extensions[3] ?? {}), false);

    // A new account of this mint starts frozen and carries the account-side extensions.
    const holder = Keypair.generate();
    const ata = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint,
      holder.publicKey,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const { data: ataData } = await parsedInfo(ata);
    assert.equal(ataData.parsed.info.state, 'frozen');
    assert.deepEqual(ataData.parsed.info.extensions, [
      { extension: 'immutableOwner' },
      { extension: 'nonTransferableAccount' },
    ]);
  });

  test('account extensions: memo transfer on a token account', async () => {
    const mint = await createMint(
      connection,
      payer,
      payer.publicKey,
      null,
      2,
      undefined,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const holder = Keypair.generate();
    const account = Keypair.generate();
    const space = getAccountLen([ExtensionType.MemoTransfer]);
    await sendAndConfirmTransaction(
      connection,
      new Transaction().add(
        SystemProgram.createAccount({
          fromPubkey: payer.publicKey,
          newAccountPubkey: account.publicKey,
          space,
          lamports: rentExempt(space),
          programId: TOKEN_2022_PROGRAM_ID,
        }),
        new TransactionInstruction({
          // InitializeAccount3 (18): account, mint; owner in data.
          programId: TOKEN_2022_PROGRAM_ID,
          keys: [
            { pubkey: account.publicKey, isSigner: false, isWritable: true },
            { pubkey: mint, isSigner: false, isWritable: false },
          ],
          data: Buffer.concat([Buffer.from([18]), holder.publicKey.toBuffer()]),
        }),
        createEnableRequiredMemoTransfersInstruction(
          account.publicKey,
          holder.publicKey,
          [],
          TOKEN_2022_PROGRAM_ID,
        ),
      ),
      [payer, account, holder],
    );
    const { data } = await parsedInfo(account.publicKey);
    assert.deepEqual(data.parsed.info.extensions, [
      { extension: 'memoTransfer', state: { requireIncomingTransferMemos: true } },
    ]);
    assert.deepEqual((await outerInstructions(await firstSignature(account.publicKey))).at(-1), [
      'spl-token',
      'enableRequiredMemoTransfers',
      { account: account.publicKey.toBase58(), owner: holder.publicKey.toBase58() },
    ]);
  });

  test('scaled UI amount and pausable mints: their extensions in jsonParsed', async () => {
    const mint = await createMint2022(
      [ExtensionType.ScaledUiAmountConfig, ExtensionType.PausableConfig],
      (m) => [
        createInitializeScaledUiAmountConfigInstruction(m, payer.publicKey, 2.5, TOKEN_2022_PROGRAM_ID),
        createInitializePausableConfigInstruction(m, payer.publicKey, TOKEN_2022_PROGRAM_ID),
      ],
    );
    const { data } = await parsedInfo(mint);
    const extensions = data.parsed.info.extensions ?? [];
    assert.deepEqual(extensions[0], {
      extension: 'scaledUiAmountConfig',
      state: {
        authority: payer.publicKey.toBase58(),
        multiplier: '2.5',
        newMultiplierEffectiveTimestamp: extensions[0]?.state?.newMultiplierEffectiveTimestamp,
        newMultiplier: '2.5',
      },
    });
    assert.equal(typeof extensions[0]?.state?.newMultiplierEffectiveTimestamp, 'number');
    assert.deepEqual(extensions[1], {
      extension: 'pausableConfig',
      state: { authority: payer.publicKey.toBase58(), paused: false },
    });

    const holder = Keypair.generate();
    const ata = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint,
      holder.publicKey,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    await pause(connection, payer, mint, payer, [], undefined, TOKEN_2022_PROGRAM_ID);
    const { data: paused } = await parsedInfo(mint);
    assert.deepEqual(paused.parsed.info.extensions?.[1], {
      extension: 'pausableConfig',
      state: { authority: payer.publicKey.toBase58(), paused: true },
    });
    const { data: ataData } = await parsedInfo(ata);
    assert.deepEqual(ataData.parsed.info.extensions, [
      { extension: 'immutableOwner' },
      { extension: 'pausableAccount' },
    ]);
  });

  test('scaled UI amount: balances, supply and holders show the multiplier, as the program itself renders it', async () => {
    const mint = await createMint2022([ExtensionType.ScaledUiAmountConfig], (m) => [
      createInitializeScaledUiAmountConfigInstruction(m, payer.publicKey, 2.5, TOKEN_2022_PROGRAM_ID),
    ]);
    const holder = Keypair.generate();
    const ata = await createAssociatedTokenAccountIdempotent(
      connection,
      payer,
      mint,
      holder.publicKey,
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );
    const minted = await mintTo(
      connection,
      payer,
      mint,
      ata,
      payer,
      1_234_567n,
      [],
      undefined,
      TOKEN_2022_PROGRAM_ID,
    );

    const readAll = async () => {
      const balance = (await connection.getTokenAccountBalance(ata)).value;
      const { data } = await parsedInfo(ata);
      const supply = (await connection.getTokenSupply(mint)).value;
      const largest = (await connection.getTokenLargestAccounts(mint)).value[0];
      const byOwner = await connection.getParsedTokenAccountsByOwner(holder.publicKey, { mint });
      return {
        balance,
        parsed: data.parsed.info.tokenAmount,
        supply,
        largest: largest && { ...largest, address: largest.address.toBase58() },
        byOwner: parsed(byOwner.value[0]?.account.data).parsed.info.tokenAmount,
      };
    };
    const check = async (expected: string) => {
      // The Token-2022 program's own AmountToUiAmount (simulated) is the reference rendering.
      assert.equal(
        await amountToUiAmount(connection, payer, mint, 1_234_567n, TOKEN_2022_PROGRAM_ID),
        expected,
      );
      const amount = { amount: '1234567', decimals: 6, uiAmount: Number(expected), uiAmountString: expected };
      assert.deepEqual(await readAll(), {
        balance: amount,
        parsed: amount,
        supply: amount,
        largest: { address: ata.toBase58(), ...amount },
        byOwner: amount,
      });
    };
    // 1,234,567 × 2.5 = 3,086,417.5, floored to whole base units (never overstating a balance): 3.086417.
    await check('3.086417');
    // The transaction's token balances are rendered the same way, at its execution.
    const mintedTx = await connection.getParsedTransaction(minted, { maxSupportedTransactionVersion: 0 });
    assert.deepEqual(mintedTx?.meta?.postTokenBalances?.[0]?.uiTokenAmount, {
      amount: '1234567',
      decimals: 6,
      uiAmount: 3.086417,
      uiAmountString: '3.086417',
    });
    // A new multiplier in effect from a past timestamp applies at once.
    await updateMultiplier(connection, payer, mint, payer, 0.1, 0n, [], undefined, TOKEN_2022_PROGRAM_ID);
    await check('0.123456');
  });

  test('confidential-transfer mint extensions (initialised without proofs) in jsonParsed, as Agave decodes them', async () => {
    // Token-2022 instructions spl-token 0.4 has no builders for: ConfidentialTransferExtension (27),
    // ConfidentialTransferFeeExtension (37) and ConfidentialMintBurnExtension (42), each InitializeMint (0).
    const raw = (mint: PublicKey, data: Buffer) =>
      new TransactionInstruction({
        programId: TOKEN_2022_PROGRAM_ID,
        keys: [{ pubkey: mint, isSigner: false, isWritable: true }],
        data,
      });
    const auditor = Buffer.alloc(32, 7);
    const withheldElGamal = Buffer.alloc(32, 9);
    const supplyElGamal = Buffer.alloc(32, 5);
    const decryptableSupply = Buffer.alloc(36, 3);
    const tlv = (size: number) => 4 + size;
    const mint = await createMint2022(
      [],
      (m) => [
        raw(m, Buffer.concat([Buffer.of(27, 0), payer.publicKey.toBuffer(), Buffer.of(0), auditor])),
        createInitializeTransferFeeConfigInstruction(
          m,
          payer.publicKey,
          payer.publicKey,
          10,
          100n,
          TOKEN_2022_PROGRAM_ID,
        ),
        raw(m, Buffer.concat([Buffer.of(37, 0), payer.publicKey.toBuffer(), withheldElGamal])),
        raw(m, Buffer.concat([Buffer.of(42, 0), supplyElGamal, decryptableSupply])),
      ],
      { space: 166 + tlv(65) + tlv(108) + tlv(129) + tlv(196) },
    );
    const { data } = await parsedInfo(mint);
    const zeroCiphertext = Buffer.alloc(64).toString('base64');
    assert.deepEqual(data.parsed.info.extensions, [
      {
        extension: 'confidentialTransferMint',
        state: {
          authority: payer.publicKey.toBase58(),
          autoApproveNewAccounts: false,
          auditorElgamalPubkey: auditor.toString('base64'),
        },
      },
      {
        extension: 'transferFeeConfig',
        state: {
          transferFeeConfigAuthority: payer.publicKey.toBase58(),
          withdrawWithheldAuthority: payer.publicKey.toBase58(),
          withheldAmount: 0,
          olderTransferFee: { epoch: 0, maximumFee: 100, transferFeeBasisPoints: 10 },
          newerTransferFee: { epoch: 0, maximumFee: 100, transferFeeBasisPoints: 10 },
        },
      },
      {
        extension: 'confidentialTransferFeeConfig',
        state: {
          authority: payer.publicKey.toBase58(),
          withdrawWithheldAuthorityElgamalPubkey: withheldElGamal.toString('base64'),
          harvestToMintEnabled: true,
          withheldAmount: zeroCiphertext,
        },
      },
      {
        extension: 'confidentialMintBurn',
        state: {
          confidentialSupply: zeroCiphertext,
          decryptableSupply: decryptableSupply.toString('base64'),
          supplyElgamalPubkey: supplyElGamal.toString('base64'),
          pendingBurn: zeroCiphertext,
        },
      },
    ]);
  });

  test('confidential-transfer account extensions (configured only with a ZK proof): the decoder on their bytes', () => {
    // ConfigureAccount needs a pubkey-validity proof, which no client here can make; the account-side
    // layouts are checked on bytes instead: ConfidentialTransferAccount (295) and its fee amount (64).
    const u64 = (n: bigint) => {
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(n);
      return b;
    };
    const tlv = (type: number, value: Buffer) => {
      const head = Buffer.alloc(4);
      head.writeUInt16LE(type, 0);
      head.writeUInt16LE(value.length, 2);
      return Buffer.concat([head, value]);
    };
    const account = Buffer.concat([
      Buffer.alloc(165),
      Buffer.of(2), // account
      tlv(7, Buffer.alloc(0)),
      tlv(
        5,
        Buffer.concat([
          Buffer.of(1),
          Buffer.alloc(32, 1),
          Buffer.alloc(64, 2),
          Buffer.alloc(64, 3),
          Buffer.alloc(64, 4),
          Buffer.alloc(36, 5),
          Buffer.of(1, 0),
          u64(3n),
          u64(65_536n),
          u64(2n),
          u64(1n),
        ]),
      ),
      tlv(17, Buffer.alloc(64, 6)),
    ]);
    assert.deepEqual(parseTokenExtensions(account), [
      { extension: 'immutableOwner' },
      {
        extension: 'confidentialTransferAccount',
        state: {
          approved: true,
          elgamalPubkey: Buffer.alloc(32, 1).toString('base64'),
          pendingBalanceLo: Buffer.alloc(64, 2).toString('base64'),
          pendingBalanceHi: Buffer.alloc(64, 3).toString('base64'),
          availableBalance: Buffer.alloc(64, 4).toString('base64'),
          decryptableAvailableBalance: Buffer.alloc(36, 5).toString('base64'),
          allowConfidentialCredits: true,
          allowNonConfidentialCredits: false,
          pendingBalanceCreditCounter: 3n,
          maximumPendingBalanceCreditCounter: 65_536n,
          expectedPendingBalanceCreditCounter: 2n,
          actualPendingBalanceCreditCounter: 1n,
        },
      },
      {
        extension: 'confidentialTransferFeeAmount',
        state: { withheldAmount: Buffer.alloc(64, 6).toString('base64') },
      },
    ]);
  });
});

describe('interest-bearing mint (manual slots, so reads and the program share one Clock)', () => {
  let manual: Localnet;
  let conn: Connection;
  const owner = Keypair.generate();
  before(async () => {
    manual = await startLocalnet({ port: 0, slotMs: 0, finalizedDepth: 2 });
    conn = new Connection(manual.rpcUrl, 'processed');
    manual.airdrop(owner.publicKey.toBase58(), 10n * BigInt(LAMPORTS_PER_SOL));
  });
  after(() => manual.close());

  test('balances show the interest accrued at the Clock, as the program itself renders it', async () => {
    const mint = Keypair.generate();
    const space = getMintLen([ExtensionType.InterestBearingConfig]);
    const ata = getAssociatedTokenAddressSync(mint.publicKey, owner.publicKey, false, TOKEN_2022_PROGRAM_ID);
    await conn.sendTransaction(
      new Transaction().add(
        SystemProgram.createAccount({
          fromPubkey: owner.publicKey,
          newAccountPubkey: mint.publicKey,
          space,
          lamports: rentExempt(space),
          programId: TOKEN_2022_PROGRAM_ID,
        }),
        // The highest rate there is: 327.67 % a year.
        createInitializeInterestBearingMintInstruction(
          mint.publicKey,
          owner.publicKey,
          32_767,
          TOKEN_2022_PROGRAM_ID,
        ),
        createInitializeMint2Instruction(mint.publicKey, 9, owner.publicKey, null, TOKEN_2022_PROGRAM_ID),
        createAssociatedTokenAccountIdempotentInstruction(
          owner.publicKey,
          ata,
          owner.publicKey,
          mint.publicKey,
          TOKEN_2022_PROGRAM_ID,
        ),
        createMintToInstruction(
          mint.publicKey,
          ata,
          owner.publicKey,
          1_000_000_000_000n,
          [],
          TOKEN_2022_PROGRAM_ID,
        ),
      ),
      [owner, mint],
    );
    // Interest accrues with the Clock's unix time, which moves with each new slot: wait for the next
    // wall-clock second, then open a slot.
    const created = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) <= created) await new Promise((resolve) => setTimeout(resolve, 50));
    manual.advanceSlots(1);

    const onChain = await amountToUiAmount(
      conn,
      owner,
      mint.publicKey,
      1_000_000_000_000n,
      TOKEN_2022_PROGRAM_ID,
    );
    assert.equal(typeof onChain, 'string');
    assert.notEqual(onChain, '1000', 'no interest shown');
    const expected = {
      amount: '1000000000000',
      decimals: 9,
      uiAmount: Number(onChain),
      uiAmountString: onChain as string,
    };
    assert.deepEqual((await conn.getTokenAccountBalance(ata)).value, expected);
    assert.deepEqual((await conn.getTokenSupply(mint.publicKey)).value, expected);
    const info = await conn.getParsedAccountInfo(ata);
    assert.deepEqual(parsed(info.value?.data).parsed.info.tokenAmount, expected);
    const largest = (await conn.getTokenLargestAccounts(mint.publicKey)).value[0];
    assert.deepEqual(largest && { ...largest, address: largest.address.toBase58() }, {
      address: ata.toBase58(),
      ...expected,
    });
  });
});
