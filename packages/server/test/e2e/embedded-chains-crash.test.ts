import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createSolanaRpc, type Signature } from '@solana/kit';
import Database from 'better-sqlite3';
import { type ChainFamily, evmFamily } from '../support/chain-family.ts';
import {
  CrashableGateway,
  cliWallet,
  type SentPayment,
  sendThroughCrashes,
  settledPayments,
  waitFor,
} from '../support/crash-harness.ts';
import { tempDir } from '../support/databases.ts';

const SENDS = 20;
const ROUNDS = 2;

interface NetworkView {
  readonly id: string;
  readonly family?: string;
  readonly rpcUrl: string | null;
}

/**
 * The gateway as `npm start` runs it — its own localnet and anvil, in DATA_DIR — killed with its chains
 * (SIGKILL of the gateway, the localnet process and anvil at once) at random moments of a stream of
 * custodial sends on both chains. After each restart the chains come back from disk (the localnet's
 * per-slot commit; anvil's state file plus the gateway's journal of its blocks), and at the end every
 * payment the gateway calls landed is on chain with its effects, and balances are exactly what the
 * landed payments made them. Also: the default embedded anvil finalizes a quiet chain's payments.
 */
describe('embedded chains: SIGKILL of the gateway and its chains during sends on both', () => {
  let dir: ReturnType<typeof tempDir>;
  let gateway: CrashableGateway;

  before(async () => {
    dir = tempDir();
    gateway = await CrashableGateway.create(dir.path, {
      ANVIL_PORT: '0',
      LOCALNET_PORT: '0',
      LOCALNET_SLOT_MS: '100',
    });
    gateway.killsChains = true;
  });
  after(async () => {
    await gateway.kill();
    dir.dispose();
  });

  const networks = async (key: string) => {
    const body = await gateway.get<{ networks: NetworkView[] }>(key, '/networks');
    const url = (prefix: string) => body.networks.find((n) => n.id.startsWith(prefix))?.rpcUrl as string;
    return { solana: url('solana:'), evm: url('eip155:') };
  };
  const fund = async (key: string, address: string, amount: number) => {
    const res = await fetch(`${gateway.url}/faucet`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ address, amount }),
    });
    assert.equal(res.status, 200, await res.text());
  };

  it('with the default ANVIL_BLOCK_TIME an EVM payment on a quiet chain becomes finalized and payment.finalized is recorded', {
    timeout: 120_000,
  }, async () => {
    await gateway.start();
    const { key, wallet, accountId } = cliWallet(gateway, 'finality', 'evm');
    const { evm } = await networks(key);
    const family = evmFamily(evm);
    await fund(key, wallet, 1);
    await waitFor(async () => (await family.balance(wallet)) === family.unit, 20_000);
    const res = await fetch(`${gateway.url}/payment/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ walletAddress: wallet, recipientAddress: family.newAddress(), amount: 0.01 }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const sent = (await res.json()) as SentPayment;
    // Nothing else is sent: only anvil's empty blocks (one a second) carry the payment to finality.
    await waitFor(
      async () =>
        (await gateway.get<SentPayment>(key, `/payment/status/${sent.paymentId}`)).status === 'finalized',
      30_000,
    );
    const db = new Database(join(dir.path, 'gate402.sqlite'), { readonly: true });
    try {
      const types = db
        .prepare<[string, string], { type: string }>(
          'SELECT type FROM events WHERE account_id = ? AND payment_id = ? ORDER BY seq',
        )
        .all(accountId, sent.paymentId)
        .map((row) => row.type);
      assert.ok(types.includes('payment.finalized'), `events: ${types.join(', ')}`);
    } finally {
      db.close();
    }
  });

  it('every payment the gateway calls landed is on chain with its effects, on both chains, after each crash', {
    timeout: 240_000,
  }, async () => {
    // Each round its own account, wallets and recipients (the harness's Idempotency-Keys repeat).
    for (let round = 0; round < ROUNDS; round++) await storm(round);
  });

  async function storm(round: number): Promise<void> {
    if (!gateway.alive) await gateway.start();
    const { key, wallet: solWallet, accountId } = cliWallet(gateway, `embedded crash ${round}`, 'solana');
    const { address: evmWallet } = gateway.cli<{ address: string }>([
      'wallets',
      'create',
      '--account',
      accountId,
      '--chain',
      'evm',
    ]);
    const solRecipient = (await import('@solana/kit').then((kit) => kit.generateKeyPairSigner())).address;
    const evmRecipient = evmFamily('http://127.0.0.1:1').newAddress();
    await fund(key, solWallet, 10);
    await fund(key, evmWallet, 10);
    const urls = await networks(key);
    await waitFor(async () => (await solBalance(urls.solana, solWallet)) === 10n * SOL, 20_000);
    await waitFor(async () => (await evmFamily(urls.evm).balance(evmWallet)) === 10n * ETH, 20_000);

    let kills = 0;
    const kill = gateway.kill.bind(gateway);
    gateway.kill = () => {
      kills++;
      return kill();
    };
    const answers = await sendThroughCrashes(gateway, key, SENDS, (i) =>
      i % 2 === 0
        ? { walletAddress: solWallet, recipientAddress: solRecipient, amount: (i + 1) / 1000 }
        : { walletAddress: evmWallet, recipientAddress: evmRecipient, amount: (i + 1) / 1000 },
    );
    gateway.kill = kill;
    assert.ok(kills >= 1, `round ${round}: the storm saw a crash`);
    const ids = answers.map((a) => a.paymentId);
    assert.equal(new Set(ids).size, SENDS, 'one payment per idempotency key');
    const final = await settledPayments(gateway, key, ids);
    const after = await networks(key);
    const evm = evmFamily(after.evm);

    let solPaid = 0n;
    let solFees = 0n;
    let evmPaid = 0n;
    let evmFees = 0n;
    let landed = 0;
    for (const [i, answer] of answers.entries()) {
      const p = final.get(answer.paymentId) as SentPayment;
      assert.notEqual(p.status, 'failed', `${p.paymentId} failed`);
      if (p.status !== 'confirmed' && p.status !== 'finalized') continue;
      landed++;
      const amount = BigInt(i + 1);
      if (i % 2 === 0) {
        const fee = await solFee(after.solana, p.signature);
        assert.ok(fee !== undefined, `Solana payment ${p.paymentId} (${p.status}) is on chain`);
        solPaid += (amount * SOL) / 1000n;
        solFees += fee;
      } else {
        evmPaid += (amount * ETH) / 1000n;
        evmFees += await (evm as ChainFamily).feeOf(p.signature);
      }
    }
    assert.ok(landed > 0, 'some payments landed');
    assert.equal(await solBalance(after.solana, solRecipient), solPaid, 'Solana recipient: each landed once');
    assert.equal(await solBalance(after.solana, solWallet), 10n * SOL - solPaid - solFees, 'Solana sender');
    assert.equal(await evm.balance(evmRecipient), evmPaid, 'EVM recipient: each landed once');
    assert.equal(await evm.balance(evmWallet), 10n * ETH - evmPaid - evmFees, 'EVM sender');
  }
});

const SOL = 1_000_000_000n;
const ETH = 10n ** 18n;

async function solBalance(url: string, address: string): Promise<bigint> {
  const rpc = createSolanaRpc(url);
  return (await rpc.getBalance(address as never, { commitment: 'confirmed' }).send()).value;
}

async function solFee(url: string, signature: string): Promise<bigint | undefined> {
  const rpc = createSolanaRpc(url);
  const tx = await rpc
    .getTransaction(signature as Signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
      encoding: 'json',
    })
    .send();
  return tx?.meta?.fee;
}
