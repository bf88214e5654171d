import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../support/databases.ts';
import { startTestEvm } from '../../support/test-anvil.ts';

const ETH = 10n ** 18n;

describe('embedded EVM chain across restarts', () => {
  it('keeps balances, history and the token deployment in DATA_DIR', async () => {
    const dir = tempDir('gate402-evm-');
    try {
      const first = await startTestEvm(dir.path);
      const wallet = await first.adapter.generateKeypair();
      const usdcAddress = first.usdc.address;
      assert.equal(first.usdc.deployed, true);
      const ethTx = await first.adapter.faucet?.fundNative(wallet.address, 3n * ETH + 7n);
      await first.adapter.faucet?.fundToken('USDC', wallet.address, 4_500_000n);
      await first.close();

      const second = await startTestEvm(dir.path);
      try {
        assert.equal(second.usdc.deployed, false, 'found, not deployed again');
        assert.equal(second.usdc.address, usdcAddress);
        assert.deepEqual(second.adapter.info.tokens, [{ symbol: 'USDC', address: usdcAddress, decimals: 6 }]);
        assert.equal(await second.adapter.getBalance(wallet.address), 3n * ETH + 7n);
        const token = await second.adapter.getTokenInfo(usdcAddress);
        assert.equal(token?.supply, 4_500_000n);
        assert.ok(ethTx);
        const tx = await second.adapter.getTransaction(ethTx);
        assert.deepEqual(tx?.nativeTransfers, [
          { from: second.operator, to: wallet.address, amount: 3n * ETH + 7n },
        ]);
        const record = JSON.parse(readFileSync(join(dir.path, 'anvil', 'deployments.json'), 'utf8'));
        assert.deepEqual(record, { 'eip155:31337': { USDC: usdcAddress } });
      } finally {
        await second.close();
      }
    } finally {
      dir.dispose();
    }
  });
});
