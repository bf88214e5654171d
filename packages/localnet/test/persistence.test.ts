// A ledger directory survives a restart: genesis, balances, history, the replay guard, operator keys.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  generateKeyPairSigner,
  isSolanaError,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED,
} from '@solana/kit';
import {
  fundedSigner,
  LAMPORTS_PER_SOL,
  signedTransfer,
  startHarness,
  tempDir,
  wireBase64,
} from './support/fixture.ts';

test('restart keeps genesis, balances, token balances, history, and still refuses replays', async () => {
  const dir = tempDir();
  try {
    const first = await startHarness({ ledgerDir: dir.path });
    const payer = await fundedSigner(first.localnet, 3n);
    const recipient = await generateKeyPairSigner();
    const tx = await signedTransfer(first, payer, recipient.address, LAMPORTS_PER_SOL);
    const wire = wireBase64(tx);
    const signature = await first.rpc.sendTransaction(wire, { encoding: 'base64' }).send();
    const minted = await first.localnet.mintUsdc(recipient.address, 2_500_000n);
    first.localnet.advanceSlots(3);
    const genesis = first.localnet.genesisHash;
    const usdc = first.localnet.usdcMint;
    const authority = first.localnet.mintAuthority;
    const slot = first.localnet.slot;
    await first.close();

    assert.equal(statSync(join(dir.path, 'mint-authority.json')).mode & 0o777, 0o600);
    assert.equal(authority.keypairPath, join(dir.path, 'mint-authority.json'));

    const second = await startHarness({ ledgerDir: dir.path });
    try {
      assert.equal(second.localnet.genesisHash, genesis);
      assert.deepEqual(second.localnet.usdcMint, usdc);
      assert.equal(second.localnet.mintAuthority.address, authority.address);
      assert.ok(second.localnet.slot > slot, 'slots continue after a restart');
      assert.equal((await second.rpc.getBalance(recipient.address).send()).value, LAMPORTS_PER_SOL);
      assert.equal((await second.rpc.getBalance(payer.address).send()).value, 2n * LAMPORTS_PER_SOL - 5000n);
      assert.equal(
        (await second.rpc.getTokenAccountBalance(minted.tokenAccount as never).send()).value.amount,
        '2500000',
      );
      const old = await second.rpc
        .getTransaction(signature, {
          commitment: 'finalized',
          maxSupportedTransactionVersion: 0,
          encoding: 'json',
        })
        .send();
      assert.equal(old?.meta?.fee, 5000n);
      const status = (
        await second.rpc.getSignatureStatuses([signature], { searchTransactionHistory: true }).send()
      ).value[0];
      assert.equal(status?.confirmationStatus, 'finalized');
      const history = await second.rpc.getSignaturesForAddress(recipient.address).send();
      assert.deepEqual(
        history.map((s) => s.signature),
        [minted.signature, signature],
      );
      await assert.rejects(second.rpc.sendTransaction(wire, { encoding: 'base64' }).send(), (e: unknown) => {
        assert.ok(isSolanaError(e, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE));
        assert.ok(isSolanaError(e.cause, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED));
        return true;
      });
      // The old blockhash is still within its 150 blocks, so only the ledger stops this replay.
      assert.equal((await second.rpc.getBalance(recipient.address).send()).value, LAMPORTS_PER_SOL);
      // The operator can still mint after the restart.
      await second.localnet.mintUsdc(recipient.address, 500_000n);
      // Read at processed: the default, finalized, is two slots behind the mint.
      assert.equal(
        (
          await second.rpc
            .getTokenAccountBalance(minted.tokenAccount as never, { commitment: 'processed' })
            .send()
        ).value.amount,
        '3000000',
      );
    } finally {
      await second.close();
    }
  } finally {
    dir.remove();
  }
});

test('without a ledger directory every start is a fresh chain', async () => {
  const a = await startHarness();
  const b = await startHarness();
  try {
    assert.notEqual(a.localnet.genesisHash, b.localnet.genesisHash);
    assert.equal(a.localnet.mintAuthority.keypairPath, undefined);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
