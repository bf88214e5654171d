import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestClient, type Hex, http, publicActions } from 'viem';
import { ANVIL_CHAIN_ID } from '../../../src/chains/evm/anvil-process.ts';
import { EvmAdapter } from '../../../src/chains/evm/evm-adapter.ts';
import { finalityConfirmationsOf } from '../../../src/chains/evm/evm-networks.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { AccountService } from '../../../src/services/accounts/account-service.ts';
import { PaymentLedger } from '../../../src/services/payments/payment-ledger.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { FinalityWatch } from '../../../src/workers/finality-watch.ts';
import { tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { aTestPayment } from '../../support/test-payment.ts';

const ETH = 10n ** 18n;

type Mode = 'honest' | 'no finalized tag' | 'forked block' | 'lagging';

/**
 * A JSON-RPC proxy in front of anvil that plays a node of another kind: one without the `finalized`
 * block tag, one on another fork (every block it serves by number has another hash), or one that lags
 * (its finalized block is old and it knows no receipt).
 */
async function startNodeProxy(target: string) {
  let mode: Mode = 'honest';
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const call = JSON.parse(body) as { id: unknown; method: string; params?: unknown[] };
    res.setHeader('content-type', 'application/json');
    const reply = (answer: object): void => {
      res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, ...answer }));
    };
    const tag = call.params?.[0];
    if (call.method === 'eth_getBlockByNumber' && tag === 'finalized') {
      if (mode === 'no finalized tag')
        return reply({ error: { code: -32602, message: 'unknown block tag finalized' } });
      if (mode === 'lagging') call.params = ['0x1', ...(call.params?.slice(1) ?? [])];
    }
    if (call.method === 'eth_getTransactionReceipt' && mode === 'lagging') return reply({ result: null });
    const answer = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call),
    });
    const json = (await answer.json()) as { result?: { hash?: string } | null };
    if (
      mode === 'forked block' &&
      call.method === 'eth_getBlockByNumber' &&
      typeof tag === 'string' &&
      tag.startsWith('0x') &&
      json.result?.hash !== undefined
    ) {
      json.result.hash = `0x${'ab'.repeat(32)}`;
    }
    res.end(JSON.stringify(json));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (next: Mode) => {
      mode = next;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('EVM finality: the finalized tag, N confirmations without it, and nodes that cannot be trusted', () => {
  let evm: TestEvm;
  let proxy: Awaited<ReturnType<typeof startNodeProxy>>;
  let chain: EvmAdapter;
  let anvil: ReturnType<typeof anvilClient>;
  let store: Store;
  let dispose: () => Promise<void>;
  let sender: { address: string; secretKey: Uint8Array };

  function anvilClient(url: string) {
    return createTestClient({ mode: 'anvil', transport: http(url), cacheTime: 0 }).extend(publicActions);
  }

  before(async () => {
    evm = await startTestEvm();
    proxy = await startNodeProxy(evm.anvil.rpcUrl);
    anvil = anvilClient(evm.anvil.rpcUrl);
    chain = new EvmAdapter({
      info: evm.adapter.info,
      rpcUrl: proxy.url,
      chainId: ANVIL_CHAIN_ID,
      pollIntervalMs: 20,
      finalityConfirmations: 5n,
    });
    sender = await chain.generateKeypair();
    await evm.adapter.faucet?.fundNative(sender.address, ETH);
    const storage = tempSqlite();
    dispose = storage.dispose;
    ({ store } = await openStore(storage.location));
  });
  after(async () => {
    await chain.close();
    await proxy.close();
    await store.close();
    await dispose();
    await evm.close();
    evm.dispose();
  });

  async function mined(): Promise<{ hash: string; block: bigint }> {
    proxy.set('honest');
    const prepared = await chain.prepareTransfer({ from: sender.address, to: evm.operator, amount: 1_000n });
    const signed = await chain.sign(prepared, sender.secretKey);
    await chain.broadcast(signed.wire);
    const receipt = await anvil.waitForTransactionReceipt({
      hash: signed.signature as Hex,
      pollingInterval: 20,
    });
    return { hash: signed.signature, block: receipt.blockNumber };
  }

  it('has documented finality depths for known networks and 64 for others', () => {
    assert.deepEqual(
      [1, 11155111, 8453, 84532, 10, 42161, 137, 999].map((id) => finalityConfirmationsOf(id)),
      [64n, 64n, 900n, 900n, 900n, 4_800n, 256n, 64n],
    );
  });

  it('without the finalized tag, a block is final N confirmations deep', async () => {
    await anvil.mine({ blocks: 10 });
    const { hash, block } = await mined();
    proxy.set('no finalized tag');
    assert.equal(await chain.finalizedSlot(), (await anvil.getBlockNumber()) - 5n);
    assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'confirmed', slot: block });
    await anvil.mine({ blocks: 4 });
    assert.equal((await chain.getSignatureStatus(hash))?.status, 'confirmed', '4 blocks on top are not 5');
    await anvil.mine({ blocks: 1 });
    assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'finalized', slot: block });
  });

  it('a receipt whose block is not the canonical one at its height is never called finalized', async () => {
    const { hash, block } = await mined();
    await anvil.mine({ blocks: 70 });
    proxy.set('forked block');
    assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'confirmed', slot: block });
    proxy.set('honest');
    assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'finalized', slot: block });
  });

  it('a lagging node (old finalized block, no receipt) flips no confirmed payment, and the payment finalizes once it catches up', async () => {
    const accountId = (await new AccountService(store).createAccount({ name: 'lag', plan: 'standard' })).id;
    const ledger = new PaymentLedger(store, new NetworkRegistry([]));
    const watch = new FinalityWatch({ payments: store.payments, ledger, now: Date.now });
    const { hash, block } = await mined();
    const payment = aTestPayment(Date.now(), accountId, {
      mode: 'local',
      network: chain.info.id,
      signature: hash,
      slot: block,
      blockHeight: block,
    });
    await ledger.record(payment);
    await anvil.mine({ blocks: 70 });
    proxy.set('lagging');
    for (let i = 0; i < 3; i++) await watch.check((await store.payments.get(payment.id)) ?? payment, chain);
    assert.equal((await store.payments.get(payment.id))?.status, 'confirmed');
    proxy.set('honest');
    await watch.check((await store.payments.get(payment.id)) ?? payment, chain);
    assert.equal((await store.payments.get(payment.id))?.status, 'finalized');
  });
});
