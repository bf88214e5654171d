// What wallets, explorers and the `solana` CLI ask a validator beyond payments, answered with
// Agave's shapes: SlotHashes (address lookup tables), cluster, leader and supply queries, the
// prioritization-fee account filter and signatureSubscribe's received notification.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import {
  AddressLookupTableProgram,
  Connection,
  Keypair,
  PublicKey,
  SYSVAR_SLOT_HASHES_PUBKEY,
  Transaction,
} from '@solana/web3.js';
import { getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';
import { getCreateAssociatedTokenIdempotentInstructionAsync } from '@solana-program/token';
import WebSocket from 'ws';
import {
  fundedSigner,
  type Harness,
  LAMPORTS_PER_SOL,
  rawCall,
  signedTransfer,
  startHarness,
  wireBase64,
} from './support/fixture.ts';

let h: Harness;
before(async () => {
  h = await startHarness({ finalizedDepth: 2 });
  h.localnet.advanceSlots(5);
});
after(() => h.close());

test('createLookupTable with a slot from getSlot (confirmed or finalized) lands: SlotHashes follows the slots', async () => {
  const connection = new Connection(h.localnet.rpcUrl, 'confirmed');
  const payer = Keypair.generate();
  h.localnet.airdrop(payer.publicKey.toBase58(), 2n * LAMPORTS_PER_SOL);
  h.localnet.advanceSlots(1);
  for (const commitment of ['confirmed', 'finalized'] as const) {
    const recentSlot = await connection.getSlot(commitment);
    const [create, table] = AddressLookupTableProgram.createLookupTable({
      authority: payer.publicKey,
      payer: payer.publicKey,
      recentSlot,
    });
    const tx = new Transaction().add(create);
    tx.recentBlockhash = (await connection.getLatestBlockhash()).blockhash;
    tx.feePayer = payer.publicKey;
    tx.sign(payer);
    await connection.sendRawTransaction(tx.serialize());
    h.localnet.advanceSlots(1);
    const account = await connection.getAccountInfo(table);
    assert.ok(account, `the table made with the ${commitment} slot ${recentSlot} exists`);
    assert.ok(account.owner.equals(AddressLookupTableProgram.programId));
  }
  // The sysvar itself: a u64 count, then (slot, hash) pairs, newest first — read in the open slot (at
  // confirmed it is the confirmed slot's, one entry fewer).
  const sysvar = await connection.getAccountInfo(SYSVAR_SLOT_HASHES_PUBKEY, 'processed');
  assert.ok(sysvar);
  const count = Number(sysvar.data.readBigUInt64LE(0));
  const newest = Number(sysvar.data.readBigUInt64LE(8));
  const current = await connection.getSlot('processed');
  assert.equal(newest, current - 1, 'the newest entry is the last ended slot');
  assert.equal(count, current, 'one entry per ended slot (fewer than 512 so far)');
  const newestHash = new PublicKey(sysvar.data.subarray(16, 48)).toBase58();
  const block = await rawCall(h.localnet.rpcUrl, 'getBlock', [
    newest,
    { commitment: 'confirmed', transactionDetails: 'none' },
  ]);
  assert.equal(newestHash, (block.result as { blockhash: string }).blockhash);
});

test('cluster, leader, supply and inflation queries answer with Agave shapes', async () => {
  const identity = (await h.rpc.getIdentity().send()).identity;
  const slot = Number(await h.rpc.getSlot({ commitment: 'confirmed' }).send());
  const version = await h.rpc.getVersion().send();
  assert.notEqual(version['feature-set'], 0);
  const nodes = await h.rpc.getClusterNodes().send();
  assert.equal(nodes.length, 1);
  assert.equal(nodes[0]?.pubkey, identity);
  assert.equal(nodes[0]?.featureSet, version['feature-set']);
  assert.deepEqual(await h.rpc.getVoteAccounts().send(), { current: [], delinquent: [] });
  assert.equal(await h.rpc.minimumLedgerSlot().send(), 0n);
  assert.deepEqual(await h.rpc.getSlotLeaders(BigInt(slot) as never, 3).send(), [
    identity,
    identity,
    identity,
  ]);
  assert.deepEqual((await rawCall(h.localnet.rpcUrl, 'getSlotLeaders', [0, 5001])).error, {
    code: -32602,
    message: 'Invalid limit; max 5000',
  });
  const schedule = await h.rpc.getLeaderSchedule(null, { identity }).send();
  assert.equal(schedule?.[identity]?.length, 432_000);
  const other = (await generateKeyPairSigner()).address;
  assert.deepEqual(await h.rpc.getLeaderSchedule(null, { identity: other }).send(), {});
  const production = await h.rpc.getBlockProduction({ commitment: 'confirmed' }).send();
  assert.deepEqual(production.value.range, { firstSlot: 0n, lastSlot: BigInt(slot) });
  assert.deepEqual(production.value.byIdentity[identity], [BigInt(slot + 1), BigInt(slot + 1)]);
  assert.deepEqual(
    (await rawCall(h.localnet.rpcUrl, 'getBlockProduction', [{ range: { firstSlot: 3, lastSlot: 2 } }]))
      .error,
    { code: -32602, message: 'lastSlot, 2, cannot be less than firstSlot, 3' },
  );
  assert.deepEqual(await h.rpc.getRecentPerformanceSamples(5).send(), []);
  assert.deepEqual(await h.rpc.getInflationGovernor().send(), {
    foundation: 0,
    foundationTerm: 0,
    initial: 0,
    taper: 0,
    terminal: 0,
  });
  assert.equal((await h.rpc.getInflationRate().send()).total, 0);
  assert.equal((await h.rpc.getStakeMinimumDelegation().send()).value, 1_000_000_000n);

  // Supply: the sum of every account's lamports; the faucet is the largest holder.
  const supply = (await h.rpc.getSupply({ commitment: 'confirmed' }).send()).value;
  assert.equal(supply.circulating, supply.total);
  assert.equal(supply.nonCirculating, 0n);
  const largest = (await h.rpc.getLargestAccounts({ commitment: 'confirmed' }).send()).value;
  assert.ok(largest.length > 0 && largest.length <= 20);
  assert.ok(
    largest.every((a, i) => i === 0 || (largest[i - 1] as { lamports: bigint }).lamports >= a.lamports),
  );
  const faucetBalance = (
    await h.rpc.getBalance(largest[0]?.address as never, { commitment: 'confirmed' }).send()
  ).value;
  assert.equal(largest[0]?.lamports, faucetBalance);
  // A transfer burns its fee: the supply drops by exactly 5000 lamports.
  const payer = await fundedSigner(h.localnet, 1n);
  h.localnet.advanceSlots(1);
  const before = (await h.rpc.getSupply({ commitment: 'confirmed' }).send()).value.total;
  const tx = await signedTransfer(h, payer, (await generateKeyPairSigner()).address, LAMPORTS_PER_SOL / 10n);
  await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  h.localnet.advanceSlots(1);
  assert.equal((await h.rpc.getSupply({ commitment: 'confirmed' }).send()).value.total, before - 5000n);
});

test('getRecentPrioritizationFees with accounts: the larger of the slot minimum and what writers of them paid', async () => {
  const cheap = await fundedSigner(h.localnet, 1n);
  const dear = await fundedSigner(h.localnet, 1n);
  h.localnet.advanceSlots(1);
  const cheapTo = (await generateKeyPairSigner()).address;
  const dearTo = (await generateKeyPairSigner()).address;
  const slot = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());
  const plain = await signedTransfer(h, cheap, cheapTo, LAMPORTS_PER_SOL / 10n);
  const priced = await signedTransfer(h, dear, dearTo, LAMPORTS_PER_SOL / 10n, {
    extra: [getSetComputeUnitPriceInstruction({ microLamports: 7_000n })],
  });
  for (const tx of [plain, priced])
    await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  h.localnet.advanceSlots(1);
  const feeAt = async (accounts: string[]) =>
    (await h.rpc.getRecentPrioritizationFees(accounts as never).send()).find((f) => Number(f.slot) === slot)
      ?.prioritizationFee;
  assert.equal(await feeAt([]), 0n, 'the slot minimum');
  assert.equal(await feeAt([dearTo]), 7_000n);
  assert.equal(await feeAt([cheapTo]), 0n);
  assert.equal(await feeAt([cheapTo, dear.address]), 7_000n);
  assert.deepEqual((await rawCall(h.localnet.rpcUrl, 'getRecentPrioritizationFees', [['nope']])).error, {
    code: -32602,
    message: 'Invalid param: Invalid',
  });
});

test('signatureSubscribe with enableReceivedNotification: receivedSignature, then the commitment', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  h.localnet.advanceSlots(1);
  const tx = await signedTransfer(h, payer, (await generateKeyPairSigner()).address, LAMPORTS_PER_SOL / 10n);
  const signature = getSignatureFromTransaction(tx);
  const ws = new WebSocket(h.localnet.wsUrl);
  const frames: Record<string, unknown>[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
  await new Promise((resolve) => ws.once('open', resolve));
  ws.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'signatureSubscribe',
      params: [signature, { commitment: 'confirmed', enableReceivedNotification: true }],
    }),
  );
  const until = async (n: number) => {
    for (let i = 0; i < 100 && frames.length < n; i++) await new Promise((r) => setTimeout(r, 10));
  };
  await until(1);
  const landedSlot = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());
  await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  await until(2);
  h.localnet.advanceSlots(1);
  await until(3);
  ws.close();
  const notes = frames
    .filter((f) => f.method === 'signatureNotification')
    .map((f) => (f.params as { result: unknown }).result);
  assert.deepEqual(notes, [
    { context: { slot: landedSlot }, value: 'receivedSignature' },
    { context: { slot: landedSlot }, value: { err: null } },
  ]);
});

test('account reads honour commitment: processed sees the open slot, confirmed the last ended one, finalized finalizedDepth back', async () => {
  const payer = await fundedSigner(h.localnet, 3n);
  const recipient = await generateKeyPairSigner();
  h.localnet.advanceSlots(3); // the airdrop is finalized now
  const balances = async () =>
    Promise.all(
      (['processed', 'confirmed', 'finalized'] as const).map(
        async (commitment) => (await h.rpc.getBalance(payer.address, { commitment }).send()).value,
      ),
    );
  const start = 3n * LAMPORTS_PER_SOL;
  const after = start - LAMPORTS_PER_SOL - 5000n;
  const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL);
  await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  assert.deepEqual(await balances(), [after, start, start]);
  h.localnet.advanceSlots(1);
  assert.deepEqual(await balances(), [after, after, start]);
  // finalized is finalizedDepth (2) slots behind the open one: the landing slot's, two slots on.
  h.localnet.advanceSlots(1);
  assert.deepEqual(await balances(), [after, after, after]);

  // A new account does not exist yet at a commitment that precedes it, in every read.
  const fresh = await generateKeyPairSigner();
  const create = await signedTransfer(h, payer, fresh.address, LAMPORTS_PER_SOL / 2n);
  await h.rpc.sendTransaction(wireBase64(create), { encoding: 'base64' }).send();
  const info = async (commitment: 'processed' | 'confirmed') =>
    (await h.rpc.getAccountInfo(fresh.address, { commitment, encoding: 'base64' }).send()).value?.lamports;
  assert.equal(await info('processed'), LAMPORTS_PER_SOL / 2n);
  assert.equal(await info('confirmed'), undefined);
  const multiple = await h.rpc
    .getMultipleAccounts([fresh.address, payer.address], { commitment: 'confirmed', encoding: 'base64' })
    .send();
  assert.deepEqual(
    multiple.value.map((a) => a?.lamports ?? null),
    [null, after],
  );
  const systemAccounts = async (commitment: 'processed' | 'confirmed') =>
    (
      await h.rpc
        .getProgramAccounts('11111111111111111111111111111111' as never, {
          commitment,
          encoding: 'base64',
          filters: [{ dataSize: 0n }],
        })
        .send()
    ).some((entry) => entry.pubkey === fresh.address);
  assert.equal(await systemAccounts('processed'), true);
  assert.equal(await systemAccounts('confirmed'), false);
  h.localnet.advanceSlots(1);
  assert.equal(await info('confirmed'), LAMPORTS_PER_SOL / 2n);
  assert.equal(await systemAccounts('confirmed'), true);
});

/** A raw PubSub connection collecting frames. */
async function pubsub(url: string) {
  const ws = new WebSocket(url);
  const frames: Record<string, unknown>[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
  await new Promise((resolve) => ws.once('open', resolve));
  const wait = async (predicate: (f: Record<string, unknown>) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const found = frames.find(predicate);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('no such frame');
  };
  const subscribe = async (id: number, method: string, params: unknown[]) => {
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return (await wait((f) => f.id === id)).result as number;
  };
  return { ws, frames, wait, subscribe };
}

test('getTokenLargestAccounts and programSubscribe (with a memcmp filter, at confirmed)', async () => {
  const usdc = h.localnet.usdcMint.address;
  const small = (await generateKeyPairSigner()).address;
  const large = (await generateKeyPairSigner()).address;
  const s = await pubsub(h.localnet.wsUrl);
  const token = (await h.rpc.getAccountInfo(usdc as never, { encoding: 'base64' }).send()).value
    ?.owner as string;
  const sub = await s.subscribe(1, 'programSubscribe', [
    token,
    {
      commitment: 'confirmed',
      encoding: 'base64',
      filters: [{ dataSize: 165 }, { memcmp: { offset: 32, bytes: large } }],
    },
  ]);
  await h.localnet.mintUsdc(small, 500_000n);
  const minted = await h.localnet.mintUsdc(large, 2_000_000n);
  const landed = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());
  assert.equal(
    s.frames.some((f) => f.method === 'programNotification'),
    false,
    'nothing before confirmed',
  );
  h.localnet.advanceSlots(1);
  const note = (await s.wait((f) => f.method === 'programNotification')).params as {
    subscription: number;
    result: { context: { slot: number }; value: { pubkey: string; account: { owner: string } } };
  };
  assert.equal(note.subscription, sub);
  assert.equal(note.result.context.slot, landed);
  assert.equal(note.result.value.pubkey, minted.tokenAccount);
  assert.equal(note.result.value.account.owner, token);
  assert.equal(
    s.frames.filter((f) => f.method === 'programNotification').length,
    1,
    'the filter (owner = large) leaves out the small holder',
  );
  s.ws.close();

  const largest = (await h.rpc.getTokenLargestAccounts(usdc as never, { commitment: 'confirmed' }).send())
    .value;
  const amounts = largest.map((a) => BigInt(a.amount));
  assert.deepEqual(
    amounts,
    [...amounts].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)),
    'most first',
  );
  const ours = largest.filter((a) => a.address === minted.tokenAccount);
  assert.deepEqual(ours, [
    { address: minted.tokenAccount, amount: '2000000', decimals: 6, uiAmount: 2, uiAmountString: '2' },
  ]);
  assert.deepEqual((await rawCall(h.localnet.rpcUrl, 'getTokenLargestAccounts', [large])).error, {
    code: -32602,
    message: 'Invalid param: not a Token mint',
  });
});

test('slotsUpdatesSubscribe: createdBank, frozen with its counts, optimisticConfirmation, root', async () => {
  await fundedSigner(h.localnet, 1n); // one transaction in the slot that ends
  const s = await pubsub(h.localnet.wsUrl);
  await s.subscribe(1, 'slotsUpdatesSubscribe', []);
  const ended = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());
  h.localnet.advanceSlots(1);
  const updates = async (type: string) =>
    (
      (await s.wait((f) => (f.params as { result?: { type?: string } } | undefined)?.result?.type === type))
        .params as { result: Record<string, unknown> }
    ).result;
  const created = await updates('createdBank');
  assert.equal(created.slot, ended + 1);
  assert.equal(created.parent, ended);
  const frozen = await updates('frozen');
  assert.equal(frozen.slot, ended);
  assert.deepEqual(frozen.stats, {
    numTransactionEntries: 1,
    numSuccessfulTransactions: 1,
    numFailedTransactions: 0,
    maxTransactionsPerEntry: 1,
  });
  assert.equal((await updates('optimisticConfirmation')).slot, ended);
  assert.equal((await updates('root')).slot, ended + 1 - 2);
  s.ws.close();
});

test('simulateTransaction with innerInstructions: the CPIs of an associated token account creation, parsed', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  const owner = (await generateKeyPairSigner()).address;
  const mint = h.localnet.usdcMint.address;
  const tokenProgram = (await h.rpc.getAccountInfo(mint as never, { encoding: 'base64' }).send()).value
    ?.owner;
  const create = await getCreateAssociatedTokenIdempotentInstructionAsync({
    payer,
    owner,
    mint: mint as never,
    ...(tokenProgram === undefined ? {} : { tokenProgram }),
  });
  const { value: lifetime } = await h.rpc.getLatestBlockhash({ commitment: 'processed' }).send();
  const tx = await signTransactionMessageWithSigners(
    pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(payer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
      (m) => appendTransactionMessageInstructions([create], m),
    ),
  );
  const simulate = (innerInstructions: boolean) =>
    rawCall(h.localnet.rpcUrl, 'simulateTransaction', [
      wireBase64(tx),
      { encoding: 'base64', innerInstructions, commitment: 'processed' },
    ]);
  const plain = (await simulate(false)).result as { value: { innerInstructions: unknown; err: unknown } };
  assert.equal(plain.value.err, null);
  assert.equal(plain.value.innerInstructions, null);
  const withInner = (await simulate(true)).result as {
    value: {
      innerInstructions: { index: number; instructions: { program?: string; parsed?: { type: string } }[] }[];
    };
  };
  assert.equal(withInner.value.innerInstructions.length, 1);
  assert.equal(withInner.value.innerInstructions[0]?.index, 0);
  const types = withInner.value.innerInstructions[0]?.instructions.map(
    (ix) => `${ix.program}:${ix.parsed?.type}`,
  );
  assert.ok(types?.includes('system:createAccount'), String(types));
  assert.ok(
    types?.some((t) => t.endsWith(':initializeAccount3')),
    String(types),
  );
});

test('jsonParsed sysvars: Clock, Rent, EpochSchedule and SlotHashes as Agave parses them', async () => {
  const parsed = async (address: string) => {
    const result = (
      await rawCall(h.localnet.rpcUrl, 'getAccountInfo', [
        address,
        { encoding: 'jsonParsed', commitment: 'processed' },
      ])
    ).result as {
      value: { data: { program: string; parsed: { type: string; info: Record<string, unknown> } } };
    };
    assert.equal(result.value.data.program, 'sysvar');
    return result.value.data.parsed;
  };
  const slot = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());
  const clock = await parsed('SysvarC1ock11111111111111111111111111111111');
  assert.equal(clock.type, 'clock');
  assert.equal(clock.info.slot, slot);
  assert.deepEqual(Object.keys(clock.info).sort(), [
    'epoch',
    'epochStartTimestamp',
    'leaderScheduleEpoch',
    'slot',
    'unixTimestamp',
  ]);
  assert.ok(Math.abs((clock.info.unixTimestamp as number) - Date.now() / 1000) < 60);
  // The Rent the chain holds (LiteSVM's: 6960 lamports a byte-year, threshold 1), agreeing with
  // getMinimumBalanceForRentExemption: (128 bytes of account overhead + data) × rate × threshold.
  const rent = await parsed('SysvarRent111111111111111111111111111111111');
  assert.equal(rent.type, 'rent');
  assert.deepEqual(Object.keys(rent.info).sort(), [
    'burnPercent',
    'exemptionThreshold',
    'lamportsPerByteYear',
  ]);
  assert.equal(typeof rent.info.lamportsPerByteYear, 'string');
  assert.equal(
    BigInt(
      Math.round(Number(rent.info.lamportsPerByteYear) * (rent.info.exemptionThreshold as number) * 128),
    ),
    await h.rpc.getMinimumBalanceForRentExemption(0n).send(),
  );
  const schedule = await parsed('SysvarEpochSchedu1e111111111111111111111111');
  assert.equal(schedule.type, 'epochSchedule');
  assert.deepEqual(Object.keys(schedule.info).sort(), [
    'firstNormalEpoch',
    'firstNormalSlot',
    'leaderScheduleSlotOffset',
    'slotsPerEpoch',
    'warmup',
  ]);
  const hashes = (await parsed('SysvarS1otHashes111111111111111111111111111')) as unknown as {
    type: string;
    info: { slot: number; hash: string }[];
  };
  assert.equal(hashes.type, 'slotHashes');
  assert.equal(hashes.info[0]?.slot, slot - 1);
});

test('blockSubscribe: the block at confirmed, as getBlock, with only the transactions naming the account', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  h.localnet.advanceSlots(1);
  const recipient = (await generateKeyPairSigner()).address;
  const s = await pubsub(h.localnet.wsUrl);
  const sub = await s.subscribe(1, 'blockSubscribe', [
    { mentionsAccountOrProgram: recipient },
    { commitment: 'confirmed', transactionDetails: 'signatures', showRewards: false },
  ]);
  const tx = await signedTransfer(h, payer, recipient, LAMPORTS_PER_SOL / 10n);
  const signature = await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  await fundedSigner(h.localnet, 1n); // another transaction in the same slot, not naming the recipient
  const slot = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());
  h.localnet.advanceSlots(1);
  const note = (await s.wait((f) => f.method === 'blockNotification')).params as {
    subscription: number;
    result: { context: { slot: number }; value: { slot: number; err: null; block: Record<string, unknown> } };
  };
  assert.equal(note.subscription, sub);
  assert.equal(note.result.value.slot, slot);
  assert.equal(note.result.value.err, null);
  const getBlock = (
    await rawCall(h.localnet.rpcUrl, 'getBlock', [
      slot,
      { commitment: 'confirmed', transactionDetails: 'signatures', rewards: false },
    ])
  ).result as Record<string, unknown>;
  assert.deepEqual(note.result.value.block, { ...getBlock, signatures: [signature] });
  assert.equal((getBlock.signatures as string[]).length, 2, 'the block itself holds both');
  s.ws.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'blockSubscribe',
      params: ['all', { commitment: 'processed' }],
    }),
  );
  assert.equal(((await s.wait((f) => f.id === 2)).error as { code: number }).code, -32602);
  s.ws.close();
});
