import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import { localnetAdapter } from '../src/chains/solana/connect-solana.ts';
import type { SolanaAdapter } from '../src/chains/solana/solana-adapter.ts';
import { generateSolanaKeypair } from '../src/chains/solana/solana-keypair.ts';
import { CrashableGateway, sendThroughCrashes, settledPayments, waitFor } from './support/crash-harness.ts';
import { tempDir } from './support/databases.ts';

const SENDS = 20;
const LAMPORTS = 1_000_000_000n;

/**
 * Exactly once across crashes: a stream of sends, each retried by its client with the same
 * Idempotency-Key, while the gateway is SIGKILLed at random moments and restarted. The chain runs
 * outside the gateway (as a real cluster does), so it keeps going while the gateway is down.
 */
describe('crash recovery: SIGKILL during a stream of sends', () => {
  let localnet: Localnet;
  let chain: SolanaAdapter;
  let dir: ReturnType<typeof tempDir>;
  let gateway: CrashableGateway;

  before(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 32 });
    chain = localnetAdapter(localnet);
    dir = tempDir();
    gateway = await CrashableGateway.create(dir.path, {
      SOLANA_RPC_URL: localnet.rpcUrl,
      SOLANA_WS_URL: localnet.wsUrl,
      ANVIL_PORT: '0',
    });
  });
  after(async () => {
    await gateway.kill();
    await chain.close();
    await localnet.close();
    dir.dispose();
  });

  it('loses no payment, pays none twice, and settles every one to the lamport', {
    timeout: 240_000,
  }, async () => {
    const account = gateway.cli<{ id: string }>([
      'accounts',
      'create',
      '--name',
      'crash',
      '--plan',
      'enterprise',
      '--rate-limit',
      '100000',
    ]);
    const { key } = gateway.cli<{ key: string }>(['keys', 'create', '--account', account.id]);
    const { address: wallet } = gateway.cli<{ address: string }>([
      'wallets',
      'create',
      '--account',
      account.id,
      '--chain',
      'solana',
    ]);
    const recipient = generateSolanaKeypair().address;
    localnet.airdrop(wallet, 100n * LAMPORTS);
    await waitFor(async () => (await chain.getBalance(wallet)) === 100n * LAMPORTS);
    const initial = await chain.getBalance(wallet);
    await gateway.start();

    const answers = await sendThroughCrashes(gateway, key, SENDS, (i) => ({
      walletAddress: wallet,
      recipientAddress: recipient,
      amount: (i + 1) / 1000,
    }));
    const ids = answers.map((a) => a.paymentId);
    assert.equal(new Set(ids).size, SENDS, 'one payment per idempotency key');

    // Every payment settles: the reconciler finishes what the killed processes left open.
    const final = await settledPayments(gateway, key, ids);
    const history = await gateway.get<{ total: number }>(key, `/payment/history/${wallet}?limit=500`);
    assert.equal(history.total, SENDS, 'no payment recorded twice');

    const landed = [...final.values()].filter((p) => p.status === 'confirmed' || p.status === 'finalized');
    assert.ok(landed.length > 0);
    for (const p of final.values()) assert.notEqual(p.status, 'failed');
    let paid = 0n;
    let fees = 0n;
    for (const p of landed) {
      const tx = await chain.getTransaction(p.signature);
      assert.ok(tx, `landed payment ${p.signature} is on chain`);
      paid += BigInt(Math.round(p.amount * 1000)) * 1_000_000n;
      fees += tx.fee;
    }
    assert.equal(
      await chain.getBalance(recipient),
      paid,
      'the recipient got each landed payment exactly once',
    );
    assert.equal(
      await chain.getBalance(wallet),
      initial - paid - fees,
      'the sender paid amounts and fees, nothing more',
    );
  });
});
