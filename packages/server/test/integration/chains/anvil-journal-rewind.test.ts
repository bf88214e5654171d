import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Hex } from 'viem';
import { anvilTestClient } from '../../support/chain-family.ts';
import { waitFor } from '../../support/crash-harness.ts';
import { tempDir } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';

/** SIGKILL of anvil itself (it writes nothing), then the chain's own stop, once it is dead. */
async function killAnvil(evm: TestEvm): Promise<void> {
  process.kill(evm.anvil.pid, 'SIGKILL');
  await waitFor(async () => {
    try {
      process.kill(evm.anvil.pid, 0);
      return false;
    } catch {
      return true;
    }
  });
  await evm.close();
}

/**
 * The journal follows rewinds: what a restart after a kill of anvil replays is the chain anvil held,
 * never a transaction the gateway saw rewound (which would resurrect money it reported gone).
 */
describe('the anvil journal follows rewinds of the chain', () => {
  it('after anvil_rollback, evm_snapshot/evm_revert and a new block at the same height, a kill replays only the chain as it was', {
    timeout: 90_000,
  }, async () => {
    const dir = tempDir('gate402-journal-rewind-');
    try {
      const first = await startTestEvm(dir.path);
      const client = anvilTestClient(first.anvil.rpcUrl);
      const faucet = first.adapter.faucet;
      assert.ok(faucet !== undefined);
      const kept = '0x00000000000000000000000000000000000a11ce';
      const rolledBack = '0x00000000000000000000000000000000000b0b00';
      const reverted = '0x00000000000000000000000000000000000c0c00';
      const replacing = '0x00000000000000000000000000000000000d0d00';

      const keptHash = await faucet.fundNative(kept, 1000n);
      assert.equal((await first.adapter.getSignatureStatus(keptHash))?.status, 'confirmed');

      // anvil_rollback: the block of a confirmed transfer is dropped; the gateway sees it gone.
      const rolledBackHash = await faucet.fundNative(rolledBack, 2000n);
      assert.equal((await first.adapter.getSignatureStatus(rolledBackHash))?.status, 'confirmed');
      await client.request({ method: 'anvil_rollback', params: [1] } as never);
      assert.equal(await first.adapter.getSignatureStatus(rolledBackHash), undefined);

      // evm_snapshot/evm_revert, then another transfer (the same nonce) mined at the same height: the
      // journal's block there has another hash now.
      const snapshot = await client.snapshot();
      const revertedHash = await faucet.fundNative(reverted, 3000n);
      assert.equal((await first.adapter.getSignatureStatus(revertedHash))?.status, 'confirmed');
      const revertedAt = await client.getBlockNumber();
      await client.revert({ id: snapshot });
      const replacingHash = await faucet.fundNative(replacing, 4000n);
      assert.equal(await client.getBlockNumber(), revertedAt, 'the new block is at the rewound height');
      assert.equal(await first.adapter.getSignatureStatus(revertedHash), undefined);
      assert.equal((await first.adapter.getSignatureStatus(replacingHash))?.status, 'confirmed');

      await killAnvil(first);
      const second = await startTestEvm(dir.path);
      try {
        const after = anvilTestClient(second.anvil.rpcUrl);
        const receipt = (hash: string) =>
          after.getTransactionReceipt({ hash: hash as Hex }).then(
            (r) => r.status,
            () => 'absent',
          );
        assert.equal(await receipt(keptHash), 'success');
        assert.equal(await receipt(replacingHash), 'success');
        assert.equal(await receipt(rolledBackHash), 'absent', 'the rolled-back transfer is not replayed');
        assert.equal(await receipt(revertedHash), 'absent', 'the reverted transfer is not replayed');
        assert.equal(await after.getBalance({ address: kept }), 1000n);
        assert.equal(await after.getBalance({ address: rolledBack }), 0n);
        assert.equal(await after.getBalance({ address: reverted }), 0n);
        assert.equal(await after.getBalance({ address: replacing }), 4000n);
      } finally {
        await second.close();
      }
    } finally {
      dir.dispose();
    }
  });
});
