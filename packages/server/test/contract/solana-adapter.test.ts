import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ChainError } from '../../src/chains/chain-error.ts';
import { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';
import { startTestChain, type TestChain } from '../support/test-localnet.ts';

const SOL = 1_000_000_000n;

describe('Solana adapter against the localnet', () => {
  let chain: TestChain;
  let sender: { address: string; secretKey: Uint8Array };

  before(async () => {
    chain = await startTestChain();
    sender = await chain.adapter.generateKeypair();
    await chain.adapter.faucet?.fundNative(sender.address, 10n * SOL);
  });
  after(() => chain.close());

  it('describes the network and answers ping', async () => {
    await chain.adapter.ping();
    assert.equal(chain.adapter.info.id, chain.localnet.network);
    assert.equal(chain.adapter.info.isLocal, true);
    assert.deepEqual(chain.adapter.info.nativeCurrency, { symbol: 'SOL', decimals: 9 });
    // A localnet started a moment ago may still be at its first block: wait for the next one.
    const deadline = Date.now() + 5_000;
    let height = await chain.adapter.getBlockHeight();
    while (height === 0n && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      height = await chain.adapter.getBlockHeight();
    }
    assert.ok(height > 0n);
  });

  it('sends SOL with a priority fee, a memo and a reference, and reads it back exactly', async () => {
    const recipient = await chain.adapter.generateKeypair();
    const reference = await chain.adapter.generateKeypair();
    const prepared = await chain.adapter.prepareTransfer({
      from: sender.address,
      to: recipient.address,
      amount: 1_234_567_890n,
      priorityFee: 100_000n,
      memo: 'pay_TEST memo',
      reference: reference.address,
    });
    assert.equal(prepared.priorityFee, 100_000n);
    assert.equal(prepared.fee, 105_000n);
    assert.equal(prepared.feePayer, sender.address);

    const before = await chain.adapter.getBalance(sender.address);
    const signed = await chain.adapter.sign(prepared, sender.secretKey);
    assert.equal(await chain.adapter.broadcast(signed.wire), signed.signature);
    const outcome = await chain.adapter.waitForConfirmation(
      signed.signature,
      signed.lastValidBlockHeight,
      10_000,
    );
    assert.equal(outcome.status, 'confirmed');

    assert.equal(await chain.adapter.getBalance(recipient.address), 1_234_567_890n);
    assert.equal(await chain.adapter.getBalance(sender.address), before - 1_234_567_890n - 105_000n);

    const tx = await chain.adapter.getTransaction(signed.signature);
    assert.ok(tx);
    assert.equal(tx.fee, 105_000n);
    assert.equal(tx.error, null);
    assert.equal(tx.feePayer, sender.address);
    assert.deepEqual(tx.nativeTransfers, [
      { from: sender.address, to: recipient.address, amount: 1_234_567_890n },
    ]);
    assert.deepEqual(tx.memos, ['pay_TEST memo']);
    assert.ok(tx.accounts.includes(reference.address));

    const found = await chain.adapter.findSignatures(reference.address);
    assert.deepEqual(
      found.map((f) => f.signature),
      [signed.signature],
    );
  });

  it('refuses a second broadcast of the same transaction', async () => {
    const recipient = await chain.adapter.generateKeypair();
    const prepared = await chain.adapter.prepareTransfer({
      from: sender.address,
      to: recipient.address,
      amount: SOL,
    });
    const signed = await chain.adapter.sign(prepared, sender.secretKey);
    await chain.adapter.broadcast(signed.wire);
    await chain.adapter.waitForConfirmation(signed.signature, signed.lastValidBlockHeight, 10_000);
    await assert.rejects(
      chain.adapter.broadcast(signed.wire),
      (e: unknown) => e instanceof ChainError && e.kind === 'already_processed',
    );
    assert.equal(await chain.adapter.getBalance(recipient.address), SOL, 'paid once');
  });

  it('reports insufficient funds as such', async () => {
    const poor = await chain.adapter.generateKeypair();
    await chain.adapter.faucet?.fundNative(poor.address, 1_000_000n);
    const prepared = await chain.adapter.prepareTransfer({
      from: poor.address,
      to: sender.address,
      amount: SOL,
    });
    const signed = await chain.adapter.sign(prepared, poor.secretKey);
    await assert.rejects(
      chain.adapter.broadcast(signed.wire),
      (e: unknown) => e instanceof ChainError && e.kind === 'insufficient_funds',
    );
    assert.equal(await chain.adapter.getBalance(poor.address), 1_000_000n, 'nothing was charged');
  });

  it('reads the USDC-like mint and says undefined for an account that is no mint', async () => {
    const owner = await chain.adapter.generateKeypair();
    await chain.adapter.faucet?.fundToken('USDC', owner.address, 2_500_000n);
    const usdc = chain.adapter.info.tokens[0];
    assert.ok(usdc);
    const info = await chain.adapter.getTokenInfo(usdc.address);
    assert.ok(info);
    assert.equal(info.decimals, 6);
    assert.ok(info.supply >= 2_500_000n);
    assert.equal(info.mintAuthority, chain.localnet.mintAuthority.address);
    assert.equal(info.program, 'spl-token');
    assert.equal(await chain.adapter.getTokenInfo(sender.address), undefined);
  });

  it('answers pending when confirmation takes longer than the wait', async () => {
    const unknown = '5'.repeat(88);
    const outcome = await chain.adapter.waitForConfirmation(unknown, 1_000_000_000n, 300);
    assert.deepEqual(outcome, { status: 'pending' });
  });

  it('confirms by polling when subscriptions are unavailable', async () => {
    const polling = new SolanaAdapter({
      info: chain.adapter.info,
      rpcUrl: chain.localnet.rpcUrl,
      wsUrl: 'ws://127.0.0.1:1',
    });
    try {
      const recipient = await polling.generateKeypair();
      const prepared = await polling.prepareTransfer({
        from: sender.address,
        to: recipient.address,
        amount: SOL,
      });
      const signed = await polling.sign(prepared, sender.secretKey);
      await polling.broadcast(signed.wire);
      const outcome = await polling.waitForConfirmation(
        signed.signature,
        signed.lastValidBlockHeight,
        10_000,
      );
      // With 20 ms slots the transaction may already be finalized by the first poll.
      assert.ok(outcome.status === 'confirmed' || outcome.status === 'finalized', outcome.status);
    } finally {
      await polling.close();
    }
  });

  it('says unavailable, promptly, when the RPC endpoint is down', async () => {
    const down = new SolanaAdapter({ info: chain.adapter.info, rpcUrl: 'http://127.0.0.1:1' });
    await assert.rejects(
      down.getBalance(sender.address),
      (e: unknown) => e instanceof ChainError && e.kind === 'unavailable',
    );
    await down.close();
  });
});

describe('Solana adapter and blockhash expiry', () => {
  it('refuses a transaction past its lastValidBlockHeight and reports an unsent one expired', async () => {
    const chain = await startTestChain({ slotMs: 0 });
    try {
      const payer = await chain.adapter.generateKeypair();
      chain.localnet.airdrop(payer.address, 5n * SOL);
      chain.localnet.advanceSlots(2);
      const prepared = await chain.adapter.prepareTransfer({
        from: payer.address,
        to: (await chain.adapter.generateKeypair()).address,
        amount: SOL,
      });
      const signed = await chain.adapter.sign(prepared, payer.secretKey);
      chain.localnet.advanceSlots(160);
      assert.ok((await chain.adapter.getBlockHeight()) > prepared.lastValidBlockHeight);
      await assert.rejects(
        chain.adapter.broadcast(signed.wire),
        (e: unknown) => e instanceof ChainError && e.kind === 'blockhash_expired',
      );
      const outcome = await chain.adapter.waitForConfirmation(
        signed.signature,
        signed.lastValidBlockHeight,
        5_000,
      );
      assert.deepEqual(outcome, { status: 'expired' });
    } finally {
      await chain.close();
    }
  });
});
