// @coral-xyz/anchor 0.32's provider (a stock client no one here wrote) against the localnet: what an
// Anchor app does before its own program is even involved — AnchorProvider.sendAndConfirm / sendAll /
// simulate with a NodeWallet, a Program over the System program's built-in IDL, reads through the
// provider's connection at each commitment, and Anchor's log/event parsing of real transaction logs.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
// Anchor is CommonJS whose named exports Node cannot detect: its module object is the default export.
import anchor, { type Idl } from '@coral-xyz/anchor';
import {
  createAssociatedTokenAccountIdempotentInstruction,
  getAssociatedTokenAddressSync,
  TOKEN_2022_PROGRAM_ID,
} from '@solana/spl-token';
import {
  AddressLookupTableProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SendTransactionError,
  SYSVAR_CLOCK_PUBKEY,
  SYSVAR_SLOT_HASHES_PUBKEY,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { type Localnet, startLocalnet } from '../src/index.ts';

const BPF_LOADER_UPGRADEABLE = new PublicKey('BPFLoaderUpgradeab1e11111111111111111111111');

const { AnchorProvider, BN, EventParser, Native, Program, Wallet } = anchor;
type AnchorProvider = InstanceType<typeof AnchorProvider>;
type Wallet = InstanceType<typeof Wallet>;
type BN = InstanceType<typeof BN>;

const MEMO_PROGRAM = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const RENT_EXEMPT_EMPTY = 890_880;
const FEE = 5000;

function transferTx(from: PublicKey, to: PublicKey, lamports: number): Transaction {
  return new Transaction().add(SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports }));
}

describe('with a running slot clock', () => {
  let localnet: Localnet;
  let provider: AnchorProvider;
  let wallet: Wallet;

  before(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 25, finalizedDepth: 3 });
    wallet = new Wallet(Keypair.generate());
    // AnchorProvider's defaults: preflight and confirmation at `processed`.
    provider = new AnchorProvider(
      new Connection(localnet.rpcUrl, { commitment: 'processed', wsEndpoint: localnet.wsUrl }),
      wallet,
      AnchorProvider.defaultOptions(),
    );
    localnet.airdrop(wallet.publicKey.toBase58(), 50n * BigInt(LAMPORTS_PER_SOL));
  });
  after(() => localnet.close());

  test('sendAndConfirm with the default options: the wallet pays and signs, balances are exact', async () => {
    assert.deepEqual(AnchorProvider.defaultOptions(), {
      preflightCommitment: 'processed',
      commitment: 'processed',
    });
    const recipient = Keypair.generate().publicKey;
    const before = await provider.connection.getBalance(wallet.publicKey, 'processed');
    const signature = await provider.sendAndConfirm(
      transferTx(wallet.publicKey, recipient, LAMPORTS_PER_SOL),
    );
    assert.equal(typeof signature, 'string');
    assert.equal(await provider.connection.getBalance(recipient, 'processed'), LAMPORTS_PER_SOL);
    assert.equal(
      await provider.connection.getBalance(wallet.publicKey, 'processed'),
      before - LAMPORTS_PER_SOL - FEE,
    );
    // Anchor confirms at `processed`; the transaction is then readable at `confirmed` as well.
    const tx = await provider.connection.getTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    assert.equal(tx?.meta?.err, null);
    assert.equal(tx?.meta?.fee, FEE);
    assert.ok(tx?.transaction.message.staticAccountKeys[0]?.equals(wallet.publicKey));
  });

  test('sendAndConfirm with an extra signer and confirmed commitment: createAccount', async () => {
    const account = Keypair.generate();
    const tx = new Transaction().add(
      SystemProgram.createAccount({
        fromPubkey: wallet.publicKey,
        newAccountPubkey: account.publicKey,
        lamports: RENT_EXEMPT_EMPTY + 16 * 6960,
        space: 16,
        programId: MEMO_PROGRAM,
      }),
    );
    const signature = await provider.sendAndConfirm(tx, [account], {
      commitment: 'confirmed',
      preflightCommitment: 'confirmed',
    });
    const status = (await provider.connection.getSignatureStatus(signature)).value;
    assert.ok(status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized');
    // Two signatures: two fees.
    const meta = (await provider.connection.getTransaction(signature, { commitment: 'confirmed' }))?.meta;
    assert.equal(meta?.fee, 2 * FEE);
    const info = await provider.connection.getAccountInfo(account.publicKey, 'confirmed');
    assert.ok(info?.owner.equals(MEMO_PROGRAM));
    assert.equal(info?.data.length, 16);
    assert.equal(info?.lamports, RENT_EXEMPT_EMPTY + 16 * 6960);
  });

  test('sendAll: several transactions signed at once by the wallet', async () => {
    const a = Keypair.generate().publicKey;
    const b = Keypair.generate().publicKey;
    const signatures = await provider.sendAll([
      { tx: transferTx(wallet.publicKey, a, 1_000_000) },
      { tx: transferTx(wallet.publicKey, b, 2_000_000) },
    ]);
    assert.equal(signatures.length, 2);
    assert.notEqual(signatures[0], signatures[1]);
    assert.equal(await provider.connection.getBalance(a, 'processed'), 1_000_000);
    assert.equal(await provider.connection.getBalance(b, 'processed'), 2_000_000);
  });

  test('a versioned (v0) transaction through sendAndConfirm, signed by the wallet', async () => {
    const recipient = Keypair.generate().publicKey;
    const { blockhash } = await provider.connection.getLatestBlockhash('processed');
    const message = new TransactionMessage({
      payerKey: wallet.publicKey,
      recentBlockhash: blockhash,
      instructions: [
        SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: recipient, lamports: 3_000_000 }),
      ],
    }).compileToV0Message();
    const signature = await provider.sendAndConfirm(new VersionedTransaction(message));
    assert.equal(await provider.connection.getBalance(recipient, 'processed'), 3_000_000);
    const tx = await provider.connection.getTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    assert.equal(tx?.version, 0);
  });

  test('a failing transaction: refused in preflight with the program logs; with skipPreflight, the logs of the landed failure', async () => {
    const poor = new Wallet(Keypair.generate());
    localnet.airdrop(poor.publicKey.toBase58(), 1_000_000n);
    const poorProvider = new AnchorProvider(provider.connection, poor, AnchorProvider.defaultOptions());
    const tooMuch = () => transferTx(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL);

    const refused = await poorProvider.sendAndConfirm(tooMuch()).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(refused instanceof SendTransactionError, String(refused));
    assert.match(refused.message, /custom program error: 0x1/);
    assert.ok(
      refused.logs?.some((l) => l.startsWith('Transfer: insufficient lamports')),
      String(refused.logs),
    );
    assert.equal(await provider.connection.getBalance(poor.publicKey, 'processed'), 1_000_000);

    // skipPreflight: it lands, pays its fee and fails; Anchor reads its logs back from getTransaction.
    const landed = await poorProvider
      .sendAndConfirm(tooMuch(), [], { skipPreflight: true, commitment: 'confirmed' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    // Anchor 0.32 builds that error with web3.js's older positional constructor, which web3.js 1.98
    // no longer has ("Unknown action 'undefined'"): the logs are read back here as Anchor does.
    assert.ok(landed instanceof SendTransactionError, String(landed));
    const failed = (await provider.connection.getSignaturesForAddress(poor.publicKey, {}, 'confirmed'))[0];
    assert.deepEqual(failed?.err, { InstructionError: [0, { Custom: 1 }] });
    const landedTx = await provider.connection.getTransaction(failed?.signature ?? '', {
      commitment: 'confirmed',
    });
    assert.deepEqual(landedTx?.meta?.err, { InstructionError: [0, { Custom: 1 }] });
    assert.deepEqual(landedTx?.meta?.logMessages, [
      'Program 11111111111111111111111111111111 invoke [1]',
      `Transfer: insufficient lamports 995000, need ${LAMPORTS_PER_SOL}`,
      'Program 11111111111111111111111111111111 failed: custom program error: 0x1',
    ]);
    assert.equal(await provider.connection.getBalance(poor.publicKey, 'confirmed'), 1_000_000 - FEE);
  });

  test('simulate: unsigned (sigVerify off) with logs, units and the accounts after execution', async () => {
    const recipient = Keypair.generate().publicKey;
    const before = await provider.connection.getBalance(wallet.publicKey, 'processed');
    const result = await provider.simulate(
      transferTx(wallet.publicKey, recipient, 1_234_567),
      undefined,
      'processed',
      [recipient, wallet.publicKey],
    );
    assert.equal((result as { err?: unknown }).err, null);
    assert.deepEqual(result.logs, [
      'Program 11111111111111111111111111111111 invoke [1]',
      'Program 11111111111111111111111111111111 success',
    ]);
    assert.equal(result.unitsConsumed, 150);
    assert.equal(result.accounts?.length, 2);
    const [recipientAfter, payerAfter] = result.accounts ?? [];
    assert.equal(recipientAfter?.lamports, 1_234_567);
    assert.equal(recipientAfter?.owner, SystemProgram.programId.toBase58());
    assert.deepEqual(recipientAfter?.data, ['', 'base64']);
    assert.equal(payerAfter?.lamports, before - 1_234_567 - FEE);
    // Nothing happened on chain.
    assert.equal(await provider.connection.getBalance(recipient, 'processed'), 0);

    // Signed by the wallet: the simulation verifies signatures and answers the same.
    const signed = await provider.simulate(transferTx(wallet.publicKey, recipient, 1_000_000), [
      wallet.payer,
    ]);
    assert.equal((signed as { err?: unknown }).err, null);
  });

  test('simulate of a failing transaction throws with the simulation response', async () => {
    const poor = Keypair.generate().publicKey;
    const error = await provider.simulate(transferTx(poor, wallet.publicKey, 1)).then(
      () => undefined,
      (e: unknown) => e as { simulationResponse?: { err: unknown; logs: string[] | null } },
    );
    // The wallet pays the fee; the unfunded source cannot pay: the System program's error 1.
    assert.deepEqual(error?.simulationResponse?.err, { InstructionError: [0, { Custom: 1 }] });
    assert.deepEqual(error?.simulationResponse?.logs, [
      'Program 11111111111111111111111111111111 invoke [1]',
      'Transfer: insufficient lamports 0, need 1',
      'Program 11111111111111111111111111111111 failed: custom program error: 0x1',
    ]);
  });

  test('an Anchor Program over the System program: methods().rpc(), simulate(), instruction()', async () => {
    const system = Native.system(provider);
    assert.ok(system.programId.equals(SystemProgram.programId));
    const recipient = Keypair.generate().publicKey;
    const signature = await system.methods
      .transfer(new BN(1_777_000))
      .accounts({ from: wallet.publicKey, to: recipient })
      .rpc({ commitment: 'confirmed' });
    assert.equal(await provider.connection.getBalance(recipient, 'confirmed'), 1_777_000);
    const tx = await provider.connection.getParsedTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    const ix = tx?.transaction.message.instructions[0];
    assert.ok(ix && 'parsed' in ix);
    assert.deepEqual(ix.parsed, {
      type: 'transfer',
      info: { source: wallet.publicKey.toBase58(), destination: recipient.toBase58(), lamports: 1_777_000 },
    });

    const simulated = await system.methods
      .transfer(new BN(1))
      .accounts({ from: wallet.publicKey, to: recipient })
      .simulate();
    assert.deepEqual(simulated.events, []);
    assert.deepEqual(simulated.raw, [
      'Program 11111111111111111111111111111111 invoke [1]',
      'Program 11111111111111111111111111111111 success',
    ]);
    const instruction = await system.methods
      .transfer(new BN(5))
      .accounts({ from: wallet.publicKey, to: recipient })
      .instruction();
    assert.deepEqual([...instruction.data], [2, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]);
  });

  test("Anchor's EventParser on real logs: CPIs tracked, an event decoded from the right program", async () => {
    // No custom program here: the Memo program logs `Memo (len N): "<memo>"`, and Anchor decodes a
    // `Program log:` line as base64 (skipping what is not base64), so a memo made of base64 carries an
    // event. The prefix "Memolen15" plus "AAA" decodes to 9 bytes: 8 of discriminator, a pad byte.
    const amount = 987_654_321n;
    const payload = Buffer.alloc(9);
    payload.writeBigUInt64LE(amount, 0);
    payload[8] = 42;
    const memo = `AAA${payload.toString('base64')}`;
    assert.equal(memo.length, 15);
    const discriminator = [...Buffer.from('Memolen15AAA', 'base64').subarray(0, 8)];
    const idl = {
      address: MEMO_PROGRAM.toBase58(),
      metadata: { name: 'memo', version: '0.1.0', spec: '0.1.0' },
      instructions: [],
      events: [{ name: 'paid', discriminator }],
      types: [
        {
          name: 'paid',
          type: {
            kind: 'struct',
            fields: [
              { name: 'pad', type: 'u8' },
              { name: 'amount', type: 'u64' },
              { name: 'tag', type: 'u8' },
            ],
          },
        },
      ],
    } as Idl;
    const program = new Program(idl, provider);
    const heard = new Promise<{ event: unknown; slot: number; signature: string }>((resolve) => {
      const id = program.addEventListener('paid', (event, slot, signature) => {
        void program.removeEventListener(id);
        resolve({ event, slot, signature });
      });
    });

    // Nested invocations first (the ATA program calls System and Token), then the memo at depth 1.
    const mint = new PublicKey(localnet.usdcMint.address);
    const owner = Keypair.generate().publicKey;
    const tx = new Transaction().add(
      createAssociatedTokenAccountIdempotentInstruction(
        wallet.publicKey,
        getAssociatedTokenAddressSync(mint, owner),
        owner,
        mint,
      ),
      new TransactionInstruction({ programId: MEMO_PROGRAM, keys: [], data: Buffer.from(memo) }),
    );
    const signature = await provider.sendAndConfirm(tx, [], { commitment: 'confirmed' });
    const logs =
      (await provider.connection.getTransaction(signature, { commitment: 'confirmed' }))?.meta?.logMessages ??
      [];
    assert.ok(logs.includes(`Program log: Memo (len 15): "${memo}"`), logs.join('\n'));
    assert.ok(
      logs.includes('Program TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA invoke [2]'),
      logs.join('\n'),
    );

    const parser = new EventParser(MEMO_PROGRAM, program.coder);
    const events = [...parser.parseLogs(logs)];
    assert.equal(events.length, 1);
    assert.equal(events[0]?.name, 'paid');
    assert.equal(events[0]?.data.amount.toString(), amount.toString());
    assert.equal(events[0]?.data.tag, 42);
    // The same logs read for another program yield nothing: the parser followed the invocation stack.
    assert.deepEqual([...new EventParser(SystemProgram.programId, program.coder).parseLogs(logs)], []);

    // addEventListener (logsSubscribe mentioning the program) heard it from the localnet's PubSub.
    const {
      event,
      signature: heardSignature,
      slot,
    } = await Promise.race([
      heard,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('no logs notification within 10 s')), 10_000).unref(),
      ),
    ]);
    assert.equal(heardSignature, signature);
    assert.equal((event as { amount: BN }).amount.toString(), amount.toString());
    const status = (await provider.connection.getSignatureStatus(signature)).value;
    assert.equal(slot, status?.slot);
  });

  test('programs and lookup tables read jsonParsed through the provider connection, as Agave decodes them', async () => {
    const { connection } = provider;
    const program = await connection.getParsedAccountInfo(TOKEN_2022_PROGRAM_ID);
    assert.equal(program.value?.executable, true);
    const programData = program.value?.data as {
      program: string;
      parsed: { type: string; info: { programData: string } };
    };
    assert.equal(programData.program, 'bpf-upgradeable-loader');
    assert.equal(programData.parsed.type, 'program');
    const [expectedProgramData] = PublicKey.findProgramAddressSync(
      [TOKEN_2022_PROGRAM_ID.toBuffer()],
      BPF_LOADER_UPGRADEABLE,
    );
    assert.equal(programData.parsed.info.programData, expectedProgramData?.toBase58());
    const raw = await connection.getAccountInfo(new PublicKey(programData.parsed.info.programData));
    const elfAt = 45;
    const data = (await connection.getParsedAccountInfo(new PublicKey(programData.parsed.info.programData)))
      .value?.data as {
      program: string;
      parsed: { type: string; info: { slot: number; authority: string | null; data: [string, string] } };
    };
    assert.equal(data.parsed.type, 'programData');
    assert.equal(data.parsed.info.slot, Number(raw?.data.readBigUInt64LE(4)));
    // The ELF, after the 45-byte metadata (13 without an authority, as Agave slices it).
    const offset = data.parsed.info.authority === null ? elfAt - 32 : elfAt;
    assert.equal(data.parsed.info.data[0], raw?.data.subarray(offset).toString('base64'));
    assert.equal(data.parsed.info.data[1], 'base64');

    // An address lookup table made and extended by the wallet.
    const recentSlot = await connection.getSlot('finalized');
    const [create, table] = AddressLookupTableProgram.createLookupTable({
      authority: wallet.publicKey,
      payer: wallet.publicKey,
      recentSlot,
    });
    const addresses = [Keypair.generate().publicKey, Keypair.generate().publicKey];
    const extend = AddressLookupTableProgram.extendLookupTable({
      lookupTable: table,
      authority: wallet.publicKey,
      payer: wallet.publicKey,
      addresses,
    });
    await provider.sendAndConfirm(new Transaction().add(create, extend), [], { commitment: 'confirmed' });
    const parsedTable = (await connection.getParsedAccountInfo(table, 'confirmed')).value?.data as {
      program: string;
      parsed: { type: string; info: Record<string, unknown> };
    };
    assert.equal(parsedTable.program, 'address-lookup-table');
    assert.equal(parsedTable.parsed.type, 'lookupTable');
    const decoded = (await connection.getAddressLookupTable(table, { commitment: 'confirmed' })).value;
    assert.ok(decoded);
    assert.deepEqual(parsedTable.parsed.info, {
      deactivationSlot: '18446744073709551615',
      lastExtendedSlot: String(decoded.state.lastExtendedSlot),
      lastExtendedSlotStartIndex: 0,
      authority: wallet.publicKey.toBase58(),
      addresses: addresses.map((a) => a.toBase58()),
    });
  });
});

describe('with manual slots: reads through the provider connection at each commitment', () => {
  let localnet: Localnet;
  let provider: AnchorProvider;

  before(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 0, finalizedDepth: 2 });
    provider = new AnchorProvider(
      new Connection(localnet.rpcUrl, 'processed'),
      new Wallet(Keypair.generate()),
      AnchorProvider.defaultOptions(),
    );
    localnet.airdrop(provider.wallet.publicKey.toBase58(), 5n * BigInt(LAMPORTS_PER_SOL));
    localnet.advanceSlots(3);
  });
  after(() => localnet.close());

  test('getAccountInfo: processed sees the open slot, confirmed the last ended one, finalized 2 back', async () => {
    const { connection, wallet } = provider;
    const recipient = Keypair.generate().publicKey;
    const tx = transferTx(wallet.publicKey, recipient, 4_000_000);
    tx.feePayer = wallet.publicKey;
    tx.recentBlockhash = (await connection.getLatestBlockhash('processed')).blockhash;
    const signed = await wallet.signTransaction(tx);
    await connection.sendRawTransaction(signed.serialize(), { preflightCommitment: 'processed' });

    const read = async () =>
      Promise.all(
        (['processed', 'confirmed', 'finalized'] as const).map(async (c) => {
          const { context, value } = await connection.getAccountInfoAndContext(recipient, c);
          return { slot: context.slot, lamports: value?.lamports ?? null };
        }),
      );
    const landedIn = localnet.slot;
    let [processed, confirmed, finalized] = await read();
    assert.deepEqual(processed, { slot: landedIn, lamports: 4_000_000 });
    assert.deepEqual(confirmed, { slot: landedIn - 1, lamports: null });
    assert.deepEqual(finalized, { slot: landedIn - 2, lamports: null });

    localnet.advanceSlots(1);
    [processed, confirmed, finalized] = await read();
    assert.equal(confirmed?.slot, landedIn);
    assert.equal(confirmed?.lamports, 4_000_000);
    assert.equal(finalized?.lamports, null);

    localnet.advanceSlots(1);
    [, , finalized] = await read();
    assert.deepEqual(finalized, { slot: landedIn, lamports: 4_000_000 });

    // The Clock sysvar too is read as of the commitment's slot, as a bank at that slot holds it.
    for (const commitment of ['processed', 'confirmed', 'finalized'] as const) {
      const clock = await connection.getParsedAccountInfo(SYSVAR_CLOCK_PUBKEY, commitment);
      const info = (clock.value as { data: { parsed: { info: { slot: number } } } }).data.parsed.info;
      assert.equal(info.slot, clock.context.slot, commitment);
    }
    const slotHashes = await connection.getParsedAccountInfo(SYSVAR_SLOT_HASHES_PUBKEY, 'confirmed');
    const newest = (slotHashes.value as { data: { parsed: { info: { slot: number }[] } } }).data.parsed
      .info[0];
    // At the confirmed slot, the newest entry is its parent.
    assert.equal(newest?.slot, slotHashes.context.slot - 1);

    // getMultipleAccountsInfo through the same connection, finalized.
    const many = await connection.getMultipleAccountsInfo(
      [recipient, Keypair.generate().publicKey],
      'finalized',
    );
    assert.equal(many[0]?.lamports, 4_000_000);
    assert.equal(many[1], null);
  });
});
