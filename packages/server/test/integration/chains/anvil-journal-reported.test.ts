import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { EvmAdapter } from '../../../src/chains/evm/evm-adapter.ts';
import { anvilTestClient } from '../../support/chain-family.ts';
import { sleep, waitFor } from '../../support/crash-harness.ts';
import { tempDir } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';

/** Every read by which the gateway learns an EVM transaction landed; resolves once it reports it. */
const READS: Record<string, (adapter: EvmAdapter, hash: string, to: string) => Promise<boolean>> = {
  getSignatureStatus: async (adapter, hash) =>
    (await adapter.getSignatureStatus(hash))?.status === 'confirmed',
  waitForConfirmation: async (adapter, hash) =>
    (await adapter.waitForConfirmation(hash, 10n ** 9n, 10_000)).status === 'confirmed',
  getTransaction: async (adapter, hash) => (await adapter.getTransaction(hash))?.error === null,
  findSignatures: async (adapter, hash, to) =>
    (await adapter.findSignatures(to, { limit: 5 })).some((found) => found.signature === hash),
};

/** A small seeded generator (mulberry32), so a failing run can be repeated with its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A transaction is reported landed only once its block is in the journal, whatever read reported it:
 * anvil killed right after the report (no state written) comes back with it. The transactions are
 * sent by a bare client, so the read under test is the only way the gateway learns of them.
 */
describe('what the adapter reported landed survives a kill of anvil right after the report', () => {
  it('randomized rounds: 1-3 transfers, one read per round, SIGKILL 0-15 ms after it answered', {
    timeout: 180_000,
  }, async () => {
    const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1_000_000);
    const next = random(seed);
    const dir = tempDir('gate402-journal-reported-');
    const reported: { hash: string; to: string; amount: bigint; read: string }[] = [];
    const reads = Object.keys(READS);
    const rounds = 2 * reads.length;
    try {
      for (let round = 0; round < rounds; round++) {
        const evm: TestEvm = await startTestEvm(dir.path);
        const client = anvilTestClient(evm.anvil.rpcUrl);
        const read = reads[round % reads.length] as string;
        const count = 1 + Math.floor(next() * 3);
        const sent = Array.from({ length: count }, (_, i) => ({
          to: privateKeyToAccount(generatePrivateKey()).address,
          amount: BigInt(round * 10 + i + 1),
        }));
        // Sent one after the other by anvil's dev account: each mined in its own block (automine).
        const hashes: string[] = [];
        for (const { to, amount } of sent)
          hashes.push(
            (await client.request({
              method: 'eth_sendTransaction',
              params: [{ from: evm.operator, to, value: toHex(amount) }],
            } as never)) as string,
          );
        // Polled as the gateway does, until the read reports each one landed.
        for (const [i, hash] of hashes.entries()) {
          const { to } = sent[i] as { to: string };
          while (!(await (READS[read] as (typeof READS)[string])(evm.adapter, hash, to))) await sleep(5);
        }
        const delay = Math.floor(next() * 16);
        if (delay > 0) await sleep(delay);
        process.kill(evm.anvil.pid, 'SIGKILL');
        for (const [i, hash] of hashes.entries())
          reported.push({ hash, read, ...(sent[i] as { to: string; amount: bigint }) });
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
      const last = await startTestEvm(dir.path);
      try {
        const client = anvilTestClient(last.anvil.rpcUrl);
        const lost: string[] = [];
        for (const payment of reported) {
          const receipt = await client
            .getTransactionReceipt({ hash: payment.hash as `0x${string}` })
            .catch(() => undefined);
          const balance = await client.getBalance({ address: payment.to as `0x${string}` });
          if (receipt?.status !== 'success' || balance !== payment.amount)
            lost.push(`${payment.read} ${payment.hash}`);
        }
        assert.deepEqual(lost, [], `seed ${seed}: reported landed, then lost by the kill`);
      } finally {
        await last.close();
      }
    } finally {
      dir.dispose();
    }
  });
});
