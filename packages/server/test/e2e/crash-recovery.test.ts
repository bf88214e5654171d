import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import { localnetAdapter } from '../../src/chains/solana/connect-solana.ts';
import type { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';
import { assertPaidOnce, type ChainFamily, solanaFamily } from '../support/chain-family.ts';
import { CrashableGateway, cliWallet, sendThroughCrashes, settledOnce } from '../support/crash-harness.ts';
import { tempDir } from '../support/databases.ts';

const SENDS = 20;

/**
 * Exactly once across crashes: a stream of sends, each retried by its client with the same
 * Idempotency-Key, while the gateway is SIGKILLed at random moments and restarted. The chain runs
 * outside the gateway (as a real cluster does), so it keeps going while the gateway is down.
 * (evm-crash-recovery.test.ts is the EVM half; both share their set-up and money checks.)
 */
describe('crash recovery: SIGKILL during a stream of sends', () => {
  let localnet: Localnet;
  let chain: SolanaAdapter;
  let family: ChainFamily;
  let dir: ReturnType<typeof tempDir>;
  let gateway: CrashableGateway;

  before(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 32 });
    chain = localnetAdapter(localnet);
    family = solanaFamily(localnet, chain);
    dir = tempDir();
    gateway = await CrashableGateway.create(dir.path, {
      SOLANA_RPC_URL: localnet.rpcUrl,
      SOLANA_WS_URL: localnet.wsUrl,
      ANVIL_PORT: '0',
    });
  });
  after(async () => {
    await gateway.dispose();
    await chain.close();
    await localnet.close();
    dir.dispose();
  });

  it('loses no payment, pays none twice, and settles every one to the lamport', {
    timeout: 240_000,
  }, async () => {
    const { key, wallet } = cliWallet(gateway, 'crash', 'solana');
    const recipient = family.newAddress();
    const initial = 100n * family.unit;
    await family.fund(wallet, initial);
    await gateway.start();

    const answers = await sendThroughCrashes(gateway, key, SENDS, (i) => ({
      walletAddress: wallet,
      recipientAddress: recipient,
      amount: (i + 1) / 1000,
    }));
    const final = await settledOnce(gateway, key, wallet, answers);

    // A send whose blockhash ran out while the gateway was down may expire; none fails.
    const landed = [...final.values()].filter((p) => p.status === 'confirmed' || p.status === 'finalized');
    assert.ok(landed.length > 0);
    for (const p of final.values()) assert.notEqual(p.status, 'failed');
    let paid = 0n;
    let fees = 0n;
    for (const p of landed) {
      paid += (BigInt(Math.round(p.amount * 1000)) * family.unit) / 1000n;
      fees += await family.feeOf(p.signature);
    }
    await assertPaidOnce(family, { wallet, recipient, initial, paid, fees });
  });
});
