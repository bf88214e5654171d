import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import { createTestClient, type Hex, http, publicActions } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { type AnvilProcess, startAnvil } from '../src/chains/evm/anvil-process.ts';
import { CrashableGateway, sendThroughCrashes, settledPayments } from './support/crash-harness.ts';
import { tempDir } from './support/databases.ts';

const SENDS = 20;
const ETH = 10n ** 18n;
const MILLI_ETH = ETH / 1000n;

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
  let dir: ReturnType<typeof tempDir>;
  let gateway: CrashableGateway;

  before(async () => {
    anvil = await startAnvil({ port: 0 });
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
    await gateway.kill();
    await anvil.stop();
    await localnet.close();
    dir.dispose();
  });

  it('loses no payment, pays none twice, leaves no nonce gap, and settles every one to the wei', {
    timeout: 240_000,
  }, async () => {
    const client = createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl), cacheTime: 0 }).extend(
      publicActions,
    );
    const account = gateway.cli<{ id: string }>([
      'accounts',
      'create',
      '--name',
      'evm crash',
      '--plan',
      'enterprise',
      '--rate-limit',
      '100000',
    ]);
    const { key } = gateway.cli<{ key: string }>(['keys', 'create', '--account', account.id]);
    const { address } = gateway.cli<{ address: string }>([
      'wallets',
      'create',
      '--account',
      account.id,
      '--chain',
      'evm',
    ]);
    const wallet = address as Hex;
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const initial = 100n * ETH;
    await client.setBalance({ address: wallet, value: initial });
    await gateway.start();

    const answers = await sendThroughCrashes(gateway, key, SENDS, (i) => ({
      walletAddress: wallet,
      recipientAddress: recipient,
      amount: (i + 1) / 1000,
    }));
    const ids = answers.map((a) => a.paymentId);
    assert.equal(new Set(ids).size, SENDS, 'one payment per idempotency key');

    const final = await settledPayments(gateway, key, ids);
    const history = await gateway.get<{ total: number }>(key, `/payment/history/${wallet}?limit=500`);
    assert.equal(history.total, SENDS, 'no payment recorded twice');

    // Nothing can expire here (no other transaction uses the wallet's nonces), so every send lands.
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
      assert.equal(tx.value, BigInt(Math.round(p.amount * 1000)) * MILLI_ETH, `${id} moved its own amount`);
      nonces.push(tx.nonce);
      paid += tx.value;
      fees += receipt.gasUsed * receipt.effectiveGasPrice;
    }
    assert.deepEqual(
      nonces.sort((a, b) => a - b),
      Array.from({ length: SENDS }, (_, i) => i),
      'nonces 0…19, each once',
    );
    assert.equal(await client.getTransactionCount({ address: wallet }), SENDS, 'no other transaction');
    assert.equal(paid, (BigInt(SENDS * (SENDS + 1)) / 2n) * MILLI_ETH, 'every amount once');
    assert.equal(
      await client.getBalance({ address: recipient }),
      paid,
      'the recipient got each exactly once',
    );
    assert.equal(
      await client.getBalance({ address: wallet }),
      initial - paid - fees,
      'the sender paid amounts and fees, nothing more',
    );
  });
});
