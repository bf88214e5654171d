import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAnvil } from '@gate402/anvil';
import { startLocalnet } from '@gate402/localnet';
import type { Hex } from 'viem';
import { localnetAdapter } from '../../src/chains/solana/connect-solana.ts';
import {
  anvilTestClient,
  assertPaidOnce,
  type ChainFamily,
  evmFamily,
  solanaFamily,
} from '../support/chain-family.ts';
import {
  CrashableGateway,
  cliWallet,
  type SentPayment,
  sendThroughCrashes,
  settledOnce,
} from '../support/crash-harness.ts';
import { tempDir } from '../support/databases.ts';

const SENDS = 20;

/**
 * The chains one family's crash run needs, started outside the gateway (as a real cluster runs), so they
 * keep going while the gateway is down.
 */
interface CrashChains {
  readonly family: ChainFamily;
  /** What the gateway's environment must say to use the outside chains. */
  readonly env: Record<string, string>;
  /** The family's own checks of every landed send from `wallet` to `recipient`, after the money checks. */
  checkLanded(run: { wallet: string; recipient: string; landed: SentPayment[] }): Promise<void>;
  close(): Promise<void>;
}

interface CrashFamily {
  readonly name: string;
  /** What the test's name promises beside the money: settled to the lamport; to the wei, with no nonce gap. */
  readonly settled: string;
  start(): Promise<CrashChains>;
  /**
   * Whether a send may expire while the gateway is down (Solana: its blockhash runs out); on EVM nothing
   * else uses the wallet's nonces, so every send lands.
   */
  readonly mayExpire: boolean;
}

/**
 * Exactly once across crashes: a stream of sends from one custodial wallet, each retried by its client
 * with the same Idempotency-Key, while the gateway is SIGKILLed at random moments and restarted.
 */
function crashRecovery(crash: CrashFamily): void {
  describe(`crash recovery on ${crash.name}: SIGKILL during a stream of sends from one wallet`, () => {
    let chains: CrashChains;
    let family: ChainFamily;
    let dir: ReturnType<typeof tempDir>;
    let gateway: CrashableGateway;

    before(async () => {
      chains = await crash.start();
      family = chains.family;
      dir = tempDir();
      gateway = await CrashableGateway.create(dir.path, chains.env);
    });
    after(async () => {
      await gateway.dispose();
      await chains.close();
      dir.dispose();
    });

    it(`loses no payment, pays none twice, and settles every one ${crash.settled}`, {
      timeout: 240_000,
    }, async () => {
      const { key, wallet } = cliWallet(gateway, `${family.chain} crash`, family.chain);
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

      const landed = [...final.values()].filter((p) => p.status === 'confirmed' || p.status === 'finalized');
      assert.ok(landed.length > 0);
      for (const [id, p] of final) {
        assert.notEqual(p.status, 'failed', `${id} failed`);
        if (!crash.mayExpire)
          assert.ok(p.status === 'confirmed' || p.status === 'finalized', `${id} is ${p.status}`);
      }
      let paid = 0n;
      let fees = 0n;
      for (const p of landed) {
        paid += (BigInt(Math.round(p.amount * 1000)) * family.unit) / 1000n;
        fees += await family.feeOf(p.signature);
      }
      await assertPaidOnce(family, { wallet, recipient, initial, paid, fees });
      await chains.checkLanded({ wallet, recipient, landed });
    });
  });
}

// Solana: a localnet outside the gateway (its embedded anvil on a free port).
crashRecovery({
  name: 'Solana',
  settled: 'to the lamport',
  start: async () => {
    const localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 32 });
    const chain = localnetAdapter(localnet);
    const family = solanaFamily(localnet, chain);
    return {
      family,
      env: { SOLANA_RPC_URL: localnet.rpcUrl, SOLANA_WS_URL: localnet.wsUrl, ANVIL_PORT: '0' },
      // Each landed send moved its own amount from the wallet to the recipient, and nothing else.
      checkLanded: async ({ wallet, recipient, landed }) => {
        for (const p of landed) {
          const tx = await chain.getTransaction(p.signature);
          const amount = BigInt(Math.round(p.amount * 1000)) * (family.unit / 1000n);
          assert.deepEqual(tx?.nativeTransfers, [{ from: wallet, to: recipient, amount }], p.signature);
        }
      },
      close: async () => {
        await chain.close();
        await localnet.close();
      },
    };
  },
  mayExpire: true,
});

// EVM: anvil outside the gateway (EVM_RPC_URLS), and a localnet for the Solana network it also needs.
// Nonces are allocated in the database with the payment they sign, so besides "paid once, lost none",
// the wallet's nonces must be exactly 0…19: a nonce taken by a send that died before it was stored would
// leave a gap that blocks every later send.
crashRecovery({
  name: 'EVM',
  settled: 'to the wei, leaving no nonce gap',
  start: async () => {
    const anvil = await startAnvil({ port: 0 });
    const localnet = await startLocalnet({ port: 0, slotMs: 50 });
    const family = evmFamily(anvil.rpcUrl);
    const client = anvilTestClient(anvil.rpcUrl);
    return {
      family,
      env: {
        SOLANA_RPC_URL: localnet.rpcUrl,
        SOLANA_WS_URL: localnet.wsUrl,
        EVM_RPC_URLS: JSON.stringify({ 'eip155:31337': anvil.rpcUrl }),
      },
      checkLanded: async ({ wallet, recipient, landed }) => {
        const milliEth = family.unit / 1000n;
        let paid = 0n;
        const nonces: number[] = [];
        for (const p of landed) {
          const hash = p.signature as Hex;
          const [tx, receipt] = await Promise.all([
            client.getTransaction({ hash }),
            client.getTransactionReceipt({ hash }),
          ]);
          assert.equal(receipt.status, 'success');
          assert.equal(tx.to?.toLowerCase(), recipient.toLowerCase());
          assert.equal(
            tx.value,
            BigInt(Math.round(p.amount * 1000)) * milliEth,
            `${p.signature} moved its own amount`,
          );
          nonces.push(tx.nonce);
          paid += tx.value;
        }
        assert.deepEqual(
          nonces.sort((a, b) => a - b),
          Array.from({ length: SENDS }, (_, i) => i),
          'nonces 0…19, each once',
        );
        assert.equal(
          await client.getTransactionCount({ address: wallet as Hex }),
          SENDS,
          'no other transaction',
        );
        assert.equal(paid, (BigInt(SENDS * (SENDS + 1)) / 2n) * milliEth, 'every amount once');
      },
      close: async () => {
        await anvil.stop();
        await localnet.close();
      },
    };
  },
  mayExpire: false,
});
