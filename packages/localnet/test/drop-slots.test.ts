// The test-only hook that drops the newest slots (as a cluster abandons a fork): blocks,
// transactions and account changes go, the same signed bytes can land again, slot numbers move on,
// finalized never moves back; refused without testHooks, on a public genesis and past finalized.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import Database from 'better-sqlite3';
import { Chain } from '../src/chain/chain.ts';
import { DropSlotsRefused } from '../src/index.ts';
import {
  fundedSigner,
  LAMPORTS_PER_SOL,
  rawCall,
  signedTransfer,
  startHarness,
  tempDir,
  wireBase64,
} from './support/fixture.ts';

test('a dropped confirmed transfer is gone (block, status, history, balances) and its bytes land again', async () => {
  const h = await startHarness({ testHooks: true, finalizedDepth: 6 });
  try {
    const payer = await fundedSigner(h.localnet, 2n);
    const recipient = await generateKeyPairSigner();
    h.localnet.advanceSlots(1);
    // A blockhash of a slot that stays: the transfer can land again after the drop.
    const blockhash = (await h.rpc.getLatestBlockhash({ commitment: 'confirmed' }).send()).value;
    h.localnet.advanceSlots(1);
    const payerBefore = (await h.rpc.getBalance(payer.address).send()).value;
    const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL, { blockhash });
    const wire = wireBase64(tx);
    const signature = await h.rpc.sendTransaction(wire, { encoding: 'base64' }).send();
    const landedSlot = h.localnet.slot;
    h.localnet.advanceSlots(1);
    const [status] = (await h.rpc.getSignatureStatuses([signature]).send()).value;
    assert.equal(status?.confirmationStatus, 'confirmed');
    assert.equal(
      (await h.rpc.getBalance(recipient.address, { commitment: 'confirmed' }).send()).value,
      LAMPORTS_PER_SOL,
    );
    const heightBefore = await h.rpc.getBlockHeight({ commitment: 'processed' }).send();
    const finalizedBefore = await h.rpc.getSlot({ commitment: 'finalized' }).send();
    const highest = h.localnet.slot;

    const answer = await rawCall(h.localnet.rpcUrl, 'localnet_dropSlots', [1]);
    assert.deepEqual(answer.result, { droppedSlots: [landedSlot, highest], slot: highest + 1 });

    assert.equal(h.localnet.slot, highest + 1, 'slot numbers continue after the highest dropped');
    assert.equal(await h.rpc.getBlockHeight({ commitment: 'processed' }).send(), heightBefore - 1n);
    assert.ok((await h.rpc.getSlot({ commitment: 'finalized' }).send()) >= finalizedBefore);
    assert.deepEqual(
      (await h.rpc.getSignatureStatuses([signature], { searchTransactionHistory: true }).send()).value,
      [null],
    );
    assert.equal(
      await h.rpc
        .getTransaction(signature, {
          commitment: 'confirmed',
          maxSupportedTransactionVersion: 0,
          encoding: 'json',
        })
        .send(),
      null,
    );
    assert.deepEqual(
      await h.rpc.getSignaturesForAddress(recipient.address, { commitment: 'confirmed' }).send(),
      [],
    );
    for (const commitment of ['processed', 'confirmed'] as const) {
      assert.equal((await h.rpc.getBalance(recipient.address, { commitment }).send()).value, 0n);
      assert.equal((await h.rpc.getBalance(payer.address, { commitment }).send()).value, payerBefore);
    }

    h.localnet.advanceSlots(1);
    const skipped = await rawCall(h.localnet.rpcUrl, 'getBlock', [landedSlot, { commitment: 'confirmed' }]);
    assert.deepEqual(skipped.error, {
      code: -32007,
      message: `Slot ${landedSlot} was skipped, or missing due to ledger jump to recent snapshot`,
    });
    const blocks = await h.rpc.getBlocks(0n, undefined, { commitment: 'confirmed' }).send();
    assert.ok(!blocks.includes(BigInt(landedSlot)) && !blocks.includes(BigInt(highest)));
    assert.ok(blocks.includes(BigInt(highest + 1)));
    const limited = await h.rpc
      .getBlocksWithLimit(BigInt(landedSlot - 1), 2, { commitment: 'confirmed' })
      .send();
    assert.deepEqual(limited, [BigInt(landedSlot - 1), BigInt(highest + 1)]);
    const newBlock = await h.rpc
      .getBlock(BigInt(highest + 1), { commitment: 'confirmed', transactionDetails: 'none', rewards: false })
      .send();
    assert.equal(newBlock?.parentSlot, BigInt(landedSlot - 1));

    // The same signed bytes land again (no AlreadyProcessed), in a new slot.
    assert.equal(await h.rpc.sendTransaction(wire, { encoding: 'base64' }).send(), signature);
    const relandedSlot = h.localnet.slot;
    assert.ok(relandedSlot > highest);
    h.localnet.advanceSlots(1);
    const [again] = (await h.rpc.getSignatureStatuses([signature]).send()).value;
    assert.equal(again?.slot, BigInt(relandedSlot));
    assert.equal((await h.rpc.getBalance(recipient.address).send()).value, LAMPORTS_PER_SOL);
    const history = await h.rpc
      .getSignaturesForAddress(recipient.address, { commitment: 'confirmed' })
      .send();
    assert.deepEqual(
      history.map((entry) => entry.signature),
      [signature],
    );
    // And only once.
    const replay = await rawCall(h.localnet.rpcUrl, 'sendTransaction', [wire, { encoding: 'base64' }]);
    assert.equal(replay.error?.code, -32002);
  } finally {
    await h.close();
  }
});

test('a transaction naming a dropped blockhash cannot land; finalized never moves back', async () => {
  const h = await startHarness({ testHooks: true, finalizedDepth: 4 });
  try {
    const payer = await fundedSigner(h.localnet, 2n);
    h.localnet.advanceSlots(6);
    const recipient = await generateKeyPairSigner();
    // The open slot's blockhash: dropped with it.
    const tx = await signedTransfer(h, payer, recipient.address, 1000n);
    const finalized = await h.rpc.getSlot({ commitment: 'finalized' }).send();
    h.localnet.dropSlots(3);
    assert.equal(await h.rpc.getSlot({ commitment: 'finalized' }).send(), finalized);
    const answer = await rawCall(h.localnet.rpcUrl, 'sendTransaction', [
      wireBase64(tx),
      { encoding: 'base64' },
    ]);
    assert.equal(answer.error?.code, -32002);
    assert.match(answer.error?.message ?? '', /Blockhash not found/);
    // Dropping again would reach the finalized slot now.
    assert.throws(() => h.localnet.dropSlots(1), DropSlotsRefused);
    for (let i = 0; i < 6; i++) {
      h.localnet.advanceSlots(1);
      assert.ok((await h.rpc.getSlot({ commitment: 'finalized' }).send()) >= finalized);
    }
    assert.ok((await h.rpc.getSlot({ commitment: 'finalized' }).send()) > finalized);
  } finally {
    await h.close();
  }
});

test('refused without testHooks, for n reaching finalized, and for bad n', async () => {
  const off = await startHarness({ finalizedDepth: 4 });
  try {
    off.localnet.advanceSlots(8);
    const answer = await rawCall(off.localnet.rpcUrl, 'localnet_dropSlots', [1]);
    assert.deepEqual(answer.error, { code: -32601, message: 'Method not found' });
    assert.throws(() => off.localnet.dropSlots(1), DropSlotsRefused);
  } finally {
    await off.close();
  }
  const on = await startHarness({ testHooks: true, finalizedDepth: 4 });
  try {
    on.localnet.advanceSlots(8);
    const slot = on.localnet.slot;
    for (const params of [[4], [0], [-1], ['1'], []]) {
      const answer = await rawCall(on.localnet.rpcUrl, 'localnet_dropSlots', params);
      assert.equal(answer.error?.code, -32602, JSON.stringify(params));
    }
    assert.equal(on.localnet.slot, slot, 'nothing changed');
    assert.deepEqual((await rawCall(on.localnet.rpcUrl, 'localnet_dropSlots', [3])).result, {
      droppedSlots: [slot - 3, slot - 2, slot - 1, slot],
      slot: slot + 1,
    });
  } finally {
    await on.close();
  }
});

test('refused on a public cluster genesis', async () => {
  const dir = tempDir();
  try {
    const first = await startHarness({ ledgerDir: dir.path });
    first.localnet.advanceSlots(4);
    await first.close();
    const db = new Database(join(dir.path, 'ledger.sqlite'));
    db.prepare("UPDATE meta SET value = ? WHERE key = 'genesis_hash'").run(
      '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d',
    );
    db.close();
    const second = await startHarness({ ledgerDir: dir.path, testHooks: true });
    try {
      second.localnet.advanceSlots(4);
      assert.throws(() => second.localnet.dropSlots(1), /public Solana cluster/);
    } finally {
      await second.close();
    }
  } finally {
    dir.remove();
  }
});

test('the drop is durable: after a crash the ledger holds the rolled-back state and slots continue', async () => {
  const dir = tempDir();
  try {
    const options = { ledgerDir: dir.path, slotMs: 0, finalizedDepth: 4, testHooks: true };
    const address = new Uint8Array(32).fill(7);
    const account = (lamports: bigint) => ({
      lamports,
      data: new Uint8Array(),
      owner: '11111111111111111111111111111111',
      executable: false,
      rentEpoch: 0n,
    });
    const first = Chain.open(options, () => {});
    first.advanceSlots(5);
    first.setAccount(address, account(1000n));
    first.advanceSlots(1);
    first.setAccount(address, account(2000n));
    first.advanceSlots(1);
    const highest = first.slot;
    assert.equal(first.getAccount(address)?.lamports, 2000n);
    assert.deepEqual(first.dropSlots(2), [highest - 2, highest - 1, highest]);
    assert.equal(first.getAccount(address), null);
    const finalized = first.slotAt('finalized');
    // No close: the process "crashes" here, the open slot is lost.
    const second = Chain.open(options, () => assert.fail('not a new chain'));
    try {
      assert.equal(second.slot, highest + 1, 'numbering continues after the highest dropped slot');
      assert.equal(second.getAccount(address), null);
      assert.equal(second.block(highest - 1), undefined);
      assert.equal(second.slotAt('finalized'), finalized, 'the finalized floor is persisted');
      second.advanceSlots(1);
      assert.ok(second.isSkipped(highest));
    } finally {
      second.close();
    }
  } finally {
    dir.remove();
  }
});
