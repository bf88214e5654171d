import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AnvilProcess, startAnvil } from '@gate402/anvil';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import type { Hex } from 'viem';
import { anvilTestClient, assertPaidOnce, type ChainFamily, evmFamily } from '../support/chain-family.ts';
import { CrashableGateway, cliWallet, sendThroughCrashes, settledOnce } from '../support/crash-harness.ts';
import { tempDir } from '../support/databases.ts';

const SENDS = 20;

/**
 * The EVM half of exactly-once across crashes (crash-recovery.test.ts is the Solana half): a stream of
 * sends from one custodial EVM wallet, each retried with its Idempotency-Key, while the gateway is
 * SIGKILLed at random moments and restarted. anvil runs outside the gateway (EVM_RPC_URLS), so it keeps
 * mining while the gateway is down. Nonces are allocated in the database with the payment they sign,
 * so besides "paid once, lost none", the wallet's nonces must be exactly 0…19: a nonce taken by a send
 * that died before it was stored would leave a gap that blocks every later send.
 */
describe('crash recovery on EVM: SIGKILL during a stream of sends from one wallet', () => {
  let anvil: AnvilProcess;
  let localnet: Localnet;
  let family: ChainFamily;
  let dir: ReturnType<typeof tempDir>;
  let gateway: CrashableGateway;

  before(async () => {
    anvil = await startAnvil({ port: 0 });
    family = evmFamily(anvil.rpcUrl);
    // The gateway needs a Solana chain too; an outside one, so nothing but the gateway is killed.
    localnet = await startLocalnet({ port: 0, slotMs: 50 });
    dir = tempDir();
    gateway = await CrashableGateway.create(dir.path, {
      SOLANA_RPC_URL: localnet.rpcUrl,
      SOLANA_WS_URL: localnet.wsUrl,
      EVM_RPC_URLS: JSON.stringify({ 'eip155:31337': anvil.rpcUrl }),
    });
  });
  after(async () => {
    await gateway.dispose();
    await anvil.stop();
    await localnet.close();
    dir.dispose();
  });

  it('loses no payment, pays none twice, leaves no nonce gap, and settles every one to the wei', {
    timeout: 240_000,
  }, async () => {
    const client = anvilTestClient(anvil.rpcUrl);
    const { key, wallet } = cliWallet(gateway, 'evm crash', 'evm');
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

    // Nothing can expire here (no other transaction uses the wallet's nonces), so every send lands.
    const milliEth = family.unit / 1000n;
    let paid = 0n;
    let fees = 0n;
    const nonces: number[] = [];
    for (const [id, p] of final) {
      assert.ok(p.status === 'confirmed' || p.status === 'finalized', `${id} is ${p.status}`);
      const hash = p.signature as Hex;
      const [tx, receipt] = await Promise.all([
        client.getTransaction({ hash }),
        client.getTransactionReceipt({ hash }),
      ]);
      assert.equal(receipt.status, 'success');
      assert.equal(tx.to?.toLowerCase(), recipient.toLowerCase());
      assert.equal(tx.value, BigInt(Math.round(p.amount * 1000)) * milliEth, `${id} moved its own amount`);
      nonces.push(tx.nonce);
      paid += tx.value;
      fees += await family.feeOf(hash);
    }
    assert.deepEqual(
      nonces.sort((a, b) => a - b),
      Array.from({ length: SENDS }, (_, i) => i),
      'nonces 0…19, each once',
    );
    assert.equal(await client.getTransactionCount({ address: wallet as Hex }), SENDS, 'no other transaction');
    assert.equal(paid, (BigInt(SENDS * (SENDS + 1)) / 2n) * milliEth, 'every amount once');
    await assertPaidOnce(family, { wallet, recipient, initial, paid, fees });
  });
});
