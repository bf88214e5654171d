import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { createPermit2ApprovalTx } from '@x402/evm';
import { UptoEvmScheme as UptoBuyerScheme } from '@x402/evm/upto/client';
import { type Address, createPublicClient, createWalletClient, getAddress, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { anvilEndpoints } from '../../../src/chains/evm/embedded-evm.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SettlementFinisher } from '../../../src/workers/settlement-finisher.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { stockPayload } from '../../support/x402-buyer.ts';

const SETTLE_WAIT_MS = 1_500;
const TOKEN_ABI = parseAbi(['function balanceOf(address) view returns (uint256)']);

/**
 * x402 `upto` settlements left open, on the embedded anvil, on SQLite (PostgreSQL when DATABASE_URL is
 * set): a process that dies between claiming a settlement (signed bytes stored) and broadcasting it, and
 * a settle that outlives its wait. The stored bytes — moving the ACTUAL amount the seller asked for — are
 * what the finisher or a retry sends; never re-signed, never another amount, paid once.
 */
describe('x402 upto on EVM: a settlement left open is finished with its stored bytes', () => {
  let evm: TestEvm;
  let storage: TempStorage;
  let gw: TestGateway | undefined;
  const masterKey = new Uint8Array(randomBytes(32));

  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const balanceOf = (address: Address) =>
    chainClient().readContract({
      address: evm.usdc.address as Address,
      abi: TOKEN_ABI,
      functionName: 'balanceOf',
      args: [address],
    });
  const start = async (adapter: ChainAdapter = evm.adapter, disposeStorage = false) => {
    const started = await startTestGateway({
      storage,
      masterKey,
      networks: new NetworkRegistry([adapter]),
      confirmTimeoutMs: SETTLE_WAIT_MS,
      disposeStorage,
    });
    await started.services.facilitator.start();
    return started;
  };
  /** A finisher that looks at every open settlement now (as if the settle's wait were long over). */
  const finisher = (on: TestGateway, instanceId: string) =>
    new SettlementFinisher({
      store: on.store,
      facilitator: on.services.facilitator,
      instanceId,
      settleWaitMs: SETTLE_WAIT_MS,
      leaseMs: 1,
      waitMs: 500,
      now: () => Date.now() + SETTLE_WAIT_MS + 1_000,
    });

  /** A seller (an account with an EVM wallet) and a buyer who approved Permit2 and holds 1 USDC. */
  const parties = async (on: TestGateway) => {
    const caller = await on.newCaller('premium');
    const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
      callAs(on, caller.key, method, url, payload);
    const wallet = getAddress((await api('POST', '/wallets', { chain: 'evm' })).body.address);
    const buyer = privateKeyToAccount(generatePrivateKey());
    await api('POST', '/faucet', { address: buyer.address, amount: 1 });
    await api('POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const hash = await createWalletClient({
      account: buyer,
      transport: http(evm.anvil.rpcUrl),
    }).sendTransaction({
      ...createPermit2ApprovalTx(evm.usdc.address as Address),
      chain: null,
    });
    await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 });
    const facilitatorAddress = on.services.facilitator.supported().signers['eip155:*']?.[0] ?? '';
    const requirements: PaymentRequirements = {
      scheme: 'upto',
      network: evm.adapter.info.id as `eip155:${string}`,
      asset: evm.usdc.address,
      amount: '80000',
      payTo: wallet,
      maxTimeoutSeconds: 300,
      extra: { assetTransferMethod: 'permit2', facilitatorAddress },
    };
    const payload: PaymentPayload = await stockPayload(new UptoBuyerScheme(buyer), requirements);
    return { caller, api, wallet, buyer, requirements, payload };
  };

  before(async () => {
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    evm = await startTestEvm();
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('a crash between claiming and broadcasting: the next process’s finisher sends the stored bytes, and the buyer pays the actual amount once', async () => {
    // The first process signs and stores the settlement, then dies before its broadcast reaches the node.
    let claimedThenDied = false;
    const dying: ChainAdapter = Object.create(evm.adapter, {
      broadcast: {
        value: () => {
          claimedThenDied = true;
          return new Promise<never>(() => {});
        },
      },
    });
    const first = await start(dying);
    const { caller, wallet, buyer, requirements, payload } = await parties(first);
    const buyerBefore = await balanceOf(buyer.address);
    const actual = { ...requirements, amount: '23456' };
    const hung = first.services.facilitator.settle(payload, actual, caller.accountId).catch(() => undefined);
    for (let i = 0; i < 200 && !claimedThenDied; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(claimedThenDied, true, 'the settlement reached its broadcast');
    const [open] = await first.store.settlements.listOpen(Date.now() + 60_000, 10);
    assert.deepEqual([open?.status, open?.amount], ['claimed', 23456n]);
    assert.match(open?.key ?? '', /:upto:permit2:/);
    await first.close();
    void hung;
    assert.equal(await balanceOf(buyer.address), buyerBefore, 'nothing reached the chain');

    gw = await start(evm.adapter, true);
    const worker = finisher(gw, 'upto-crash');
    let row = await gw.store.settlements.get(open?.key ?? '');
    for (let i = 0; i < 40 && row?.status !== 'settled' && row?.status !== 'failed'; i++) {
      await worker.runOnce();
      row = await gw.store.settlements.get(open?.key ?? '');
    }
    assert.deepEqual(
      [row?.status, row?.transactionId, row?.amount],
      ['settled', open?.transactionId, 23456n],
    );
    assert.equal(await balanceOf(buyer.address), buyerBefore - 23456n);
    const history = (await callAs(gw, caller.key, 'GET', `/payment/history/${wallet}`)).body;
    assert.deepEqual(
      [
        history.total,
        history.payments[0].amount,
        history.payments[0].signature,
        history.payments[0].paymentId,
      ],
      [1, 0.023456, open?.transactionId, row?.paymentId],
    );
    // Settled: the payload again, at the maximum or another amount, is a duplicate of that settlement.
    for (const amount of ['80000', '23456', '100']) {
      const again = await gw.services.facilitator.settle(
        payload,
        { ...requirements, amount },
        caller.accountId,
      );
      assert.deepEqual(
        [again.success, again.errorReason, again.transaction, again.amount],
        [false, 'duplicate_settlement', open?.transactionId, '23456'],
      );
    }
    assert.equal(await balanceOf(buyer.address), buyerBefore - 23456n);
    assert.equal(await worker.runOnce(), 0, 'nothing left open');
  });

  it('a settle that outlives its wait is settlement_pending; a retry at another amount looks at the same transaction, which settles the first amount once', async () => {
    gw ??= await start(evm.adapter, true);
    const on = gw;
    const { caller, buyer, requirements, payload } = await parties(on);
    const buyerBefore = await balanceOf(buyer.address);
    const anvil = createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined));
    try {
      await anvil.setAutomine(false);
      const first = await on.services.facilitator.settle(
        payload,
        { ...requirements, amount: '40000' },
        caller.accountId,
      );
      assert.deepEqual(
        [first.success, first.errorReason, first.amount],
        [false, 'settlement_pending', '40000'],
      );
      assert.match(first.transaction, /^0x[0-9a-f]{64}$/);
      const retry = await on.services.facilitator.settle(
        payload,
        { ...requirements, amount: '70000' },
        caller.accountId,
      );
      assert.deepEqual(
        [retry.success, retry.errorReason, retry.transaction, retry.amount],
        [false, 'settlement_pending', first.transaction, '40000'],
      );
      await anvil.mine({ blocks: 1 });
      await anvil.setAutomine(true);
      const done = await on.services.facilitator.settle(
        payload,
        { ...requirements, amount: '40000' },
        caller.accountId,
      );
      assert.deepEqual([done.success, done.transaction, done.amount], [true, first.transaction, '40000']);
    } finally {
      await anvil.setAutomine(true);
    }
    assert.equal(await balanceOf(buyer.address), buyerBefore - 40000n);
    assert.deepEqual(await on.store.settlements.listOpen(Date.now() + 60_000, 10), [], 'nothing left open');
  });
});
