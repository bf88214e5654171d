// @solana/kit 8 against the localnet: the calls a gateway makes, with exact lamport values.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type Address,
  address,
  airdropFactory,
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getSignatureFromTransaction,
  isSolanaError,
  lamports,
  pipe,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED,
  SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND,
  sendAndConfirmTransactionFactory,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import {
  getSetComputeUnitLimitInstruction,
  getSetComputeUnitPriceInstruction,
} from '@solana-program/compute-budget';
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import {
  fundedSigner,
  type Harness,
  LAMPORTS_PER_SOL,
  signedTransfer,
  startHarness,
  wireBase64,
} from './support/fixture.ts';

const RENT_EXEMPT_EMPTY = 890_880n;
const RENT_EXEMPT_TOKEN_ACCOUNT = 2_039_280n;

function expectPreflightError(error: unknown, causeCode: number): boolean {
  assert.ok(
    isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE),
    String(error),
  );
  assert.ok(isSolanaError(error.cause, causeCode as never), `cause: ${String(error.cause)}`);
  return true;
}

describe('with a running slot clock (subscriptions)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ slotMs: 25, finalizedDepth: 3 });
  });
  after(() => h.close());

  test('airdropFactory confirms the airdrop and the balance is exact', async () => {
    const recipient = await generateKeyPairSigner();
    const signature = await airdropFactory(h)({
      recipientAddress: recipient.address,
      lamports: lamports(1_500_000_000n),
      commitment: 'confirmed',
    });
    assert.equal(
      (await h.rpc.getBalance(recipient.address, { commitment: 'confirmed' }).send()).value,
      1_500_000_000n,
    );
    const status = (await h.rpc.getSignatureStatuses([signature]).send()).value[0];
    assert.equal(status?.err, null);
  });

  test('sendAndConfirmTransactionFactory lands a SOL transfer; getTransaction reports fee and balances', async () => {
    const payer = await fundedSigner(h.localnet, 2n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL);
    // signTransactionMessageWithSigners widens the lifetime type; this one is a blockhash lifetime.
    type Sendable = Parameters<ReturnType<typeof sendAndConfirmTransactionFactory>>[0];
    await sendAndConfirmTransactionFactory(h)(tx as Sendable, { commitment: 'confirmed' });
    const signature = getSignatureFromTransaction(tx);
    const result = await h.rpc
      .getTransaction(signature, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
        encoding: 'json',
      })
      .send();
    assert.ok(result);
    assert.equal(result.meta?.fee, 5000n);
    assert.equal(result.meta?.err, null);
    assert.deepEqual(result.meta?.preBalances, [2n * LAMPORTS_PER_SOL, 0n, 1n]);
    assert.deepEqual(result.meta?.postBalances, [LAMPORTS_PER_SOL - 5000n, LAMPORTS_PER_SOL, 1n]);
    assert.equal(result.version, 0);
    assert.deepEqual(result.transaction.message.accountKeys, [
      payer.address,
      recipient.address,
      '11111111111111111111111111111111',
    ]);
    assert.deepEqual(result.meta?.logMessages, [
      'Program 11111111111111111111111111111111 invoke [1]',
      'Program 11111111111111111111111111111111 success',
    ]);
    assert.equal((await h.rpc.getBalance(payer.address).send()).value, LAMPORTS_PER_SOL - 5000n);
  });
});

describe('in manual slot mode', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ slotMs: 0, finalizedDepth: 2 });
  });
  after(() => h.close());

  test('cluster basics: genesis, version, slots, blockhash lifetime, rent', async () => {
    const { localnet, rpc } = h;
    assert.equal(await rpc.getGenesisHash().send(), localnet.genesisHash);
    assert.equal(localnet.network, `solana:${localnet.genesisHash.slice(0, 32)}`);
    assert.notEqual(localnet.genesisHash, '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d');
    assert.equal(await rpc.getHealth().send(), 'ok');
    const slot = await rpc.getSlot({ commitment: 'processed' }).send();
    localnet.advanceSlots(5);
    assert.equal(await rpc.getSlot({ commitment: 'processed' }).send(), slot + 5n);
    assert.equal(await rpc.getSlot({ commitment: 'confirmed' }).send(), slot + 4n);
    assert.equal(await rpc.getSlot({ commitment: 'finalized' }).send(), slot + 3n);
    const height = await rpc.getBlockHeight({ commitment: 'processed' }).send();
    const { value } = await rpc.getLatestBlockhash({ commitment: 'processed' }).send();
    assert.equal(value.lastValidBlockHeight, height + 150n);
    assert.equal(
      (await rpc.isBlockhashValid(value.blockhash, { commitment: 'processed' }).send()).value,
      true,
    );
    assert.equal(await rpc.getMinimumBalanceForRentExemption(0n).send(), RENT_EXEMPT_EMPTY);
    assert.equal(await rpc.getMinimumBalanceForRentExemption(165n).send(), RENT_EXEMPT_TOKEN_ACCOUNT);
    const epoch = await rpc.getEpochInfo().send();
    assert.equal(epoch.slotsInEpoch, 432_000n);
  });

  test('priority fee is charged and reported: 5000 + ceil(price × limit / 1e6)', async () => {
    const payer = await fundedSigner(h.localnet, 1n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(h, payer, recipient.address, RENT_EXEMPT_EMPTY, {
      extra: [
        getSetComputeUnitLimitInstruction({ units: 10_000 }),
        getSetComputeUnitPriceInstruction({ microLamports: 1_500_000n }),
      ],
    });
    const signature = await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
    h.localnet.advanceSlots(1);
    const result = await h.rpc
      .getTransaction(signature, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
        encoding: 'json',
      })
      .send();
    assert.equal(result?.meta?.fee, 20_000n);
    assert.deepEqual(result?.meta?.postBalances.slice(0, 2), [
      LAMPORTS_PER_SOL - RENT_EXEMPT_EMPTY - 20_000n,
      RENT_EXEMPT_EMPTY,
    ]);
    const message = await h.rpc
      .getFeeForMessage(
        // The message bytes follow the one signature (1 length byte + 64 bytes).
        Buffer.from(wireBase64(tx), 'base64').subarray(65).toString('base64') as never,
      )
      .send();
    assert.equal(message.value, 20_000n);
  });

  test('TransferChecked of the USDC-like mint: token balances before and after are exact', async () => {
    const { localnet, rpc } = h;
    const alice = await fundedSigner(localnet, 1n);
    const bob = await generateKeyPairSigner();
    const mint = address(localnet.usdcMint.address);
    assert.equal(localnet.usdcMint.decimals, 6);
    assert.equal(localnet.usdcMint.symbol, 'USDC');
    const minted = await localnet.mintUsdc(alice.address, 10_000_000n);
    const [aliceAta] = await findAssociatedTokenPda({
      owner: alice.address,
      mint,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    const [bobAta] = await findAssociatedTokenPda({
      owner: bob.address,
      mint,
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    assert.equal(minted.tokenAccount, aliceAta);
    const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: 'processed' }).send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(alice, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) =>
        appendTransactionMessageInstructions(
          [
            getCreateAssociatedTokenIdempotentInstruction({
              payer: alice,
              ata: bobAta,
              owner: bob.address,
              mint,
            }),
            getTransferCheckedInstruction({
              source: aliceAta,
              mint,
              destination: bobAta,
              authority: alice,
              amount: 1_500_000n,
              decimals: 6,
            }),
          ],
          m,
        ),
    );
    const tx = await signTransactionMessageWithSigners(message);
    const signature = await rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
    localnet.advanceSlots(1);

    const result = await rpc
      .getTransaction(signature, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
        encoding: 'json',
      })
      .send();
    assert.equal(result?.meta?.fee, 5000n);
    const keys: readonly string[] = result?.transaction.message.accountKeys ?? [];
    const aliceIndex = keys.indexOf(aliceAta);
    const bobIndex = keys.indexOf(bobAta);
    const amounts = (
      list: readonly { accountIndex: number; uiTokenAmount: { amount: string } }[] | undefined,
    ) => Object.fromEntries((list ?? []).map((b) => [b.accountIndex, b.uiTokenAmount.amount]));
    assert.deepEqual(amounts(result?.meta?.preTokenBalances), { [aliceIndex]: '10000000' });
    assert.deepEqual(amounts(result?.meta?.postTokenBalances), {
      [aliceIndex]: '8500000',
      [bobIndex]: '1500000',
    });
    const bobBalance = result?.meta?.postTokenBalances?.find((b) => b.accountIndex === bobIndex);
    assert.deepEqual(bobBalance, {
      accountIndex: bobIndex,
      mint,
      owner: bob.address,
      programId: TOKEN_PROGRAM_ADDRESS,
      uiTokenAmount: { amount: '1500000', decimals: 6, uiAmount: 1.5, uiAmountString: '1.5' },
    });
    // Alice paid the fee and Bob's token account rent.
    const alicePre = result?.meta?.preBalances[0] ?? 0n;
    assert.equal(result?.meta?.postBalances[0], alicePre - 5000n - RENT_EXEMPT_TOKEN_ACCOUNT);

    assert.deepEqual((await rpc.getTokenAccountBalance(bobAta).send()).value, {
      amount: '1500000',
      decimals: 6,
      uiAmount: 1.5,
      uiAmountString: '1.5',
    });
    assert.equal((await rpc.getTokenSupply(mint).send()).value.amount, '10000000');
    const owned = await rpc.getTokenAccountsByOwner(bob.address, { mint }, { encoding: 'jsonParsed' }).send();
    assert.equal(owned.value.length, 1);
    assert.equal(owned.value[0]?.pubkey, bobAta);
    const parsed = owned.value[0]?.account.data as unknown as {
      parsed: { info: { tokenAmount: { amount: string } } };
    };
    assert.equal(parsed.parsed.info.tokenAmount.amount, '1500000');

    const filtered = await rpc
      .getProgramAccounts(TOKEN_PROGRAM_ADDRESS, {
        encoding: 'base64',
        filters: [
          { dataSize: 165n },
          { memcmp: { offset: 32n, bytes: bob.address as never, encoding: 'base58' } },
        ],
      })
      .send();
    assert.deepEqual(
      filtered.map((a) => a.pubkey),
      [bobAta],
    );

    const jsonParsed = await rpc
      .getTransaction(signature, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
        encoding: 'jsonParsed',
      })
      .send();
    const instructions = jsonParsed?.transaction.message.instructions as unknown as {
      program: string;
      parsed: { type: string; info: Record<string, unknown> };
    }[];
    assert.equal(instructions[0]?.program, 'spl-associated-token-account');
    assert.equal(instructions[0]?.parsed.type, 'createIdempotent');
    assert.equal(instructions[1]?.program, 'spl-token');
    assert.deepEqual(instructions[1]?.parsed, {
      type: 'transferChecked',
      info: {
        source: aliceAta,
        mint,
        destination: bobAta,
        authority: alice.address,
        // kit turns every integer of a parsed instruction into a bigint
        tokenAmount: { amount: '1500000', decimals: 6n, uiAmount: 1.5, uiAmountString: '1.5' },
      },
    });
  });

  test('a replay is refused as already processed: right away, after 300 other transactions and 200 slots', async () => {
    const { localnet, rpc } = h;
    const payer = await fundedSigner(localnet, 5n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL);
    const wire = wireBase64(tx);
    await rpc.sendTransaction(wire, { encoding: 'base64' }).send();
    const replay = () => rpc.sendTransaction(wire, { encoding: 'base64' }).send();
    await assert.rejects(replay(), (e) =>
      expectPreflightError(e, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED),
    );

    const other = await fundedSigner(localnet, 5n);
    for (let i = 0; i < 300; i++) {
      const filler = await signedTransfer(h, other, recipient.address, BigInt(1 + i));
      await rpc.sendTransaction(wireBase64(filler), { encoding: 'base64' }).send();
    }
    await assert.rejects(replay(), (e) =>
      expectPreflightError(e, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED),
    );
    localnet.advanceSlots(200);
    await assert.rejects(replay(), (e) =>
      expectPreflightError(e, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED),
    );
    // Without preflight the node takes the bytes and drops them: the money moved once.
    assert.equal(
      await rpc.sendTransaction(wire, { encoding: 'base64', skipPreflight: true }).send(),
      getSignatureFromTransaction(tx),
    );
    assert.equal(
      (await rpc.getBalance(recipient.address).send()).value,
      LAMPORTS_PER_SOL + (300n * 301n) / 2n,
    );
  });

  test('a transaction past its lastValidBlockHeight is refused: blockhash not found', async () => {
    const { localnet, rpc } = h;
    const payer = await fundedSigner(localnet, 1n);
    const recipient = await generateKeyPairSigner();
    const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: 'processed' }).send();
    const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 2n, {
      blockhash: lifetime,
    });
    const height = await rpc.getBlockHeight({ commitment: 'processed' }).send();
    localnet.advanceSlots(Number(lifetime.lastValidBlockHeight - height));
    assert.equal(await rpc.getBlockHeight({ commitment: 'processed' }).send(), lifetime.lastValidBlockHeight);
    assert.equal(
      (await rpc.isBlockhashValid(lifetime.blockhash, { commitment: 'processed' }).send()).value,
      true,
    );
    localnet.advanceSlots(1);
    assert.equal(
      (await rpc.isBlockhashValid(lifetime.blockhash, { commitment: 'processed' }).send()).value,
      false,
    );
    await assert.rejects(rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send(), (e) =>
      expectPreflightError(e, SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND),
    );
    assert.equal((await rpc.getBalance(payer.address).send()).value, LAMPORTS_PER_SOL);
    assert.equal((await rpc.getSignatureStatuses([getSignatureFromTransaction(tx)]).send()).value[0], null);
  });

  test('a failed transaction without preflight lands, pays its fee, and reports the instruction error', async () => {
    const { localnet, rpc } = h;
    const payer = await fundedSigner(localnet, 1n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(h, payer, recipient.address, 5n * LAMPORTS_PER_SOL);
    await assert.rejects(rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send(), (e: unknown) => {
      assert.ok(isSolanaError(e, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE));
      return true;
    });
    assert.equal(
      (await rpc.getBalance(payer.address, { commitment: 'processed' }).send()).value,
      LAMPORTS_PER_SOL,
      'preflight charges nothing',
    );
    const signature = await rpc
      .sendTransaction(wireBase64(tx), { encoding: 'base64', skipPreflight: true })
      .send();
    localnet.advanceSlots(1);
    const status = (await rpc.getSignatureStatuses([signature]).send()).value[0];
    assert.deepEqual(status?.err, { InstructionError: [0n, { Custom: 1n }] });
    assert.equal(
      (await rpc.getBalance(payer.address, { commitment: 'confirmed' }).send()).value,
      LAMPORTS_PER_SOL - 5000n,
    );
  });

  test('getSignaturesForAddress finds a transfer by its read-only reference account; before/until/limit page', async () => {
    const { localnet, rpc } = h;
    const payer = await fundedSigner(localnet, 1n);
    const recipient = await generateKeyPairSigner();
    const reference = (await generateKeyPairSigner()).address;
    const signatures: string[] = [];
    for (let i = 0; i < 3; i++) {
      const tx = await signedTransfer(h, payer, recipient.address, RENT_EXEMPT_EMPTY + BigInt(i), {
        reference,
      });
      signatures.push(await rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send());
      localnet.advanceSlots(1);
    }
    const found = await rpc.getSignaturesForAddress(reference as Address, { commitment: 'confirmed' }).send();
    assert.deepEqual(
      found.map((s) => s.signature),
      [...signatures].reverse(),
    );
    assert.equal(found[0]?.err, null);
    assert.equal(found[0]?.memo, null);
    assert.equal(found[0]?.confirmationStatus, 'confirmed');
    const page = await rpc
      .getSignaturesForAddress(reference as Address, {
        commitment: 'confirmed',
        before: signatures[2] as never,
        limit: 1,
      })
      .send();
    assert.deepEqual(
      page.map((s) => s.signature),
      [signatures[1]],
    );
    const until = await rpc
      .getSignaturesForAddress(reference as Address, {
        commitment: 'confirmed',
        until: signatures[0] as never,
      })
      .send();
    assert.deepEqual(
      until.map((s) => s.signature),
      [signatures[2], signatures[1]],
    );
  });

  test('commitment: nothing until its slot is committed, then confirmed, then finalized; status cache needs searchTransactionHistory later', async () => {
    const { localnet, rpc } = h;
    const payer = await fundedSigner(localnet, 1n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 2n);
    const signature = await rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
    const status = async (search = false) =>
      (await rpc.getSignatureStatuses([signature], { searchTransactionHistory: search }).send()).value[0];
    // The open slot is not durable yet, so nothing reports the transaction (see the README).
    assert.equal(await status(), null);
    assert.equal(
      await rpc
        .getTransaction(signature, {
          commitment: 'confirmed',
          maxSupportedTransactionVersion: 0,
          encoding: 'json',
        })
        .send(),
      null,
    );
    localnet.advanceSlots(1);
    assert.equal((await status())?.confirmationStatus, 'confirmed');
    assert.equal((await status())?.confirmations, 1n);
    assert.equal(
      await rpc
        .getTransaction(signature, {
          commitment: 'finalized',
          maxSupportedTransactionVersion: 0,
          encoding: 'json',
        })
        .send(),
      null,
    );
    localnet.advanceSlots(1);
    assert.equal((await status())?.confirmationStatus, 'finalized');
    assert.equal((await status())?.confirmations, null);
    assert.ok(
      await rpc
        .getTransaction(signature, {
          commitment: 'finalized',
          maxSupportedTransactionVersion: 0,
          encoding: 'json',
        })
        .send(),
    );
    localnet.advanceSlots(301);
    assert.equal(await status(), null);
    assert.equal((await status(true))?.confirmationStatus, 'finalized');
  });

  test('getBlock and getBlockTime describe the slot a transaction landed in', async () => {
    const { localnet, rpc } = h;
    const payer = await fundedSigner(localnet, 1n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 4n);
    const signature = await rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
    const slot = await rpc.getSlot({ commitment: 'processed' }).send();
    localnet.advanceSlots(1);
    const block = await rpc
      .getBlock(slot, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
        transactionDetails: 'signatures',
        rewards: false,
      })
      .send();
    assert.ok(block);
    assert.ok(block.signatures.includes(signature));
    assert.equal(block.parentSlot, slot - 1n);
    assert.equal(block.blockHeight, slot);
    const previous = await rpc
      .getBlock(slot - 1n, { commitment: 'confirmed', transactionDetails: 'none', rewards: false })
      .send();
    assert.equal(block.previousBlockhash, previous?.blockhash);
    const time = await rpc.getBlockTime(slot).send();
    assert.ok(Math.abs(Number(time) - Date.now() / 1000) < 60, 'block time follows the wall clock');
  });

  test('simulateTransaction runs without committing and returns logs and units', async () => {
    const { localnet, rpc } = h;
    const payer = await fundedSigner(localnet, 1n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 2n);
    const simulated = await rpc
      .simulateTransaction(wireBase64(tx), { encoding: 'base64', sigVerify: true })
      .send();
    assert.equal(simulated.value.err, null);
    assert.equal(simulated.value.unitsConsumed, 150n);
    assert.deepEqual(simulated.value.logs, [
      'Program 11111111111111111111111111111111 invoke [1]',
      'Program 11111111111111111111111111111111 success',
    ]);
    assert.equal((await rpc.getBalance(recipient.address).send()).value, 0n);
    const tooMuch = await signedTransfer(h, payer, recipient.address, 2n * LAMPORTS_PER_SOL);
    const failed = await rpc.simulateTransaction(wireBase64(tooMuch), { encoding: 'base64' }).send();
    assert.deepEqual(failed.value.err, { InstructionError: [0n, { Custom: 1n }] });
  });
});
