import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { readJournal } from '@gate402/anvil';
import type { Hex } from 'viem';
import { anvilFiles } from '../../../src/chains/evm/embedded-evm.ts';
import { anvilTestClient } from '../../support/chain-family.ts';
import { waitFor } from '../../support/crash-harness.ts';
import { tempDir } from '../../support/databases.ts';
import { startTestEvm } from '../../support/test-anvil.ts';

/**
 * The embedded anvil killed outright (no state write since its last interval dump) comes back with
 * every transaction the adapter reported mined: the journal mines them again at start.
 */
describe('the embedded anvil survives SIGKILL of anvil itself', () => {
  it('a transaction reported confirmed before the kill is there after the restart, with its effects', {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir('gate402-journal-');
    try {
      const first = await startTestEvm(dir.path);
      const recipient = '0x00000000000000000000000000000000000a11ce';
      const hashes: string[] = [];
      for (let i = 1; i <= 3; i++)
        hashes.push((await first.adapter.faucet?.fundNative(recipient, BigInt(i) * 1000n)) as string);
      const statuses = await Promise.all(hashes.map((hash) => first.adapter.getSignatureStatus(hash)));
      assert.deepEqual(
        statuses.map((s) => s?.status),
        ['confirmed', 'confirmed', 'confirmed'],
      );
      const height = await anvilTestClient(first.anvil.rpcUrl).getBlockNumber();
      // The kill a power cut or the OOM killer would make: anvil writes nothing.
      process.kill(first.anvil.pid, 'SIGKILL');
      await waitFor(async () => {
        try {
          process.kill(first.anvil.pid, 0);
          return false;
        } catch {
          return true;
        }
      });
      assert.ok(
        readJournal(anvilFiles(dir.path).journalFile).length > 0,
        'the journal holds the lost blocks',
      );
      // A torn append (a kill mid-write) is ignored, not fatal.
      appendFileSync(anvilFiles(dir.path).journalFile, '{"n":"99');

      const second = await startTestEvm(dir.path);
      try {
        const client = anvilTestClient(second.anvil.rpcUrl);
        for (const hash of hashes) {
          const receipt = await client.getTransactionReceipt({ hash: hash as Hex });
          assert.equal(receipt.status, 'success');
        }
        assert.equal(await client.getBalance({ address: recipient }), 6000n);
        assert.ok((await client.getBlockNumber()) >= height, 'block numbers continue');
      } finally {
        await second.close();
      }
      // A clean stop (anvil wrote its state) leaves nothing to replay.
      assert.equal(readFileSync(anvilFiles(dir.path).journalFile, 'utf8'), '');
    } finally {
      dir.dispose();
    }
  });
});
