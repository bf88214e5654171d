import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Hex } from 'viem';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { callerOf } from '../../support/api-caller.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { ETH, type EvmPaymentFixture, startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const NETWORK = 'eip155:31337';
const WALLET = '0x00000000000000000000000000000000000A11cE';

const ALLOCATOR = fileURLToPath(new URL('../../support/allocate-nonces.ts', import.meta.url));

/**
 * Two stores on one database, as two gateway instances have; on SQLite, one store twice (two SQLite
 * connections in one process would block each other synchronously; two processes are tested below).
 */
async function twoInstances(storage: TempStorage, instances: 1 | 2): Promise<[Store, Store]> {
  const a = (await openStore(storage.location)).store;
  return [a, instances === 1 ? a : (await openStore(storage.location)).store];
}

function nonceSuite(
  name: string,
  makeStorage: () => Promise<TempStorage>,
  skip: string | false,
  instances: 1 | 2,
) {
  describe(`EVM nonce allocation: ${name}`, { skip }, () => {
    let storage: TempStorage;
    let stores: [Store, Store];

    before(async () => {
      storage = await makeStorage();
      stores = await twoInstances(storage, instances);
    });
    after(async () => {
      await Promise.all([...new Set(stores)].map((s) => s.close()));
      await storage.dispose();
    });

    it(`never hands one nonce out twice: 80 concurrent allocations on ${instances} instance(s) are 80 consecutive nonces`, async () => {
      const allocate = (store: Store) => store.transaction((tx) => tx.nonces.allocate(NETWORK, WALLET, 7n));
      const nonces = await Promise.all(
        Array.from({ length: 80 }, (_, i) => allocate(stores[i % 2] as Store)),
      );
      assert.deepEqual(
        [...nonces].sort((a, b) => (a < b ? -1 : 1)),
        Array.from({ length: 80 }, (_, i) => 7n + BigInt(i)),
      );
    });

    it('starts at the chain’s pending count, catches up when the chain is ahead, never goes back', async () => {
      const [a, b] = stores;
      const other = '0x00000000000000000000000000000000000B0b00';
      assert.equal(await a.nonces.allocate(NETWORK, other, 3n), 3n);
      assert.equal(await b.nonces.allocate(NETWORK, other, 0n), 4n);
      assert.equal(await a.nonces.allocate(NETWORK, other, 10n), 10n);
      assert.equal(await b.nonces.allocate(NETWORK, other, 2n), 11n);
      assert.equal(await a.nonces.allocate('eip155:8453', other, 0n), 0n, 'one sequence per network');
    });

    it('takes a nonce back with a rolled-back transaction, and releases only the last one', async () => {
      const [a, b] = stores;
      const wallet = '0x00000000000000000000000000000000000CaFe0';
      assert.equal(await a.nonces.allocate(NETWORK, wallet, 0n), 0n);
      await assert.rejects(
        b.transaction(async (tx) => {
          assert.equal(await tx.nonces.allocate(NETWORK, wallet, 0n), 1n);
          throw new Error('refused before the payment was stored');
        }),
      );
      assert.equal(await a.nonces.allocate(NETWORK, wallet, 0n), 1n, 'the rolled-back nonce again');
      assert.equal(await b.nonces.allocate(NETWORK, wallet, 0n), 2n);
      assert.equal(await a.nonces.release(NETWORK, wallet, 1n), false, 'a later one was allocated');
      assert.equal(await a.nonces.release(NETWORK, wallet, 2n), true);
      assert.equal(await b.nonces.allocate(NETWORK, wallet, 0n), 2n);
    });
  });
}

nonceSuite('SQLite file, one instance', async () => tempSqlite(), false, 1);
nonceSuite('PostgreSQL shared by two instances', tempPostgres, SKIP_POSTGRES, 2);

describe('EVM nonce allocation: two processes on one SQLite file', () => {
  it('never hands one nonce out twice: 2 processes × 40 concurrent allocations are 80 consecutive nonces', async () => {
    const storage = tempSqlite();
    try {
      // Migrated once first, so both racers start from the same schema.
      await (await openStore(storage.location)).store.close();
      const file = storage.location.kind === 'sqlite' ? storage.location.file : '';
      const startAt = String(Date.now() + 1_500);
      const runs = await Promise.all(
        [0, 1].map(
          () =>
            new Promise<string[]>((resolve, reject) => {
              execFile(
                process.execPath,
                [
                  '--conditions=@gate402/source',
                  '--import',
                  'tsx',
                  ALLOCATOR,
                  file,
                  NETWORK,
                  WALLET,
                  '40',
                  startAt,
                ],
                { timeout: 60_000 },
                (error, stdout, stderr) =>
                  error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
              );
            }),
        ),
      );
      const all = runs.flat().map(BigInt);
      assert.deepEqual(
        [...all].sort((a, b) => (a < b ? -1 : 1)),
        Array.from({ length: 80 }, (_, i) => BigInt(i)),
      );
      assert.ok(runs.every((r) => r.length === 40));
    } finally {
      await storage.dispose();
    }
  });
});

describe('EVM sends from one wallet through two gateway instances on one PostgreSQL database', {
  skip: SKIP_POSTGRES,
}, () => {
  let f: EvmPaymentFixture;
  let second: TestGateway;
  let storage: TempStorage;

  before(async () => {
    storage = await tempPostgres();
    f = await startEvmPaymentFixture({ gateway: { storage, disposeStorage: false } });
    second = await startTestGateway({
      storage,
      disposeStorage: false,
      networks: f.gw.networks,
      masterKey: f.gw.masterKey,
    });
  });
  after(async () => {
    await second.close();
    await f.close();
    await storage.dispose();
  });

  it('gives 2 × 10 concurrent sends consecutive nonces with no duplicate and no gap; all are mined', async () => {
    const payer = await f.party(5n * ETH);
    const recipient = await f.party();
    const instances = [callerOf(f.gw), callerOf(second)];
    const sends = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        instances[i % 2]?.post(payer.key, '/payment/send', {
          walletAddress: payer.wallet,
          recipientAddress: recipient.wallet,
          amount: 0.05,
        }),
      ),
    );
    for (const response of sends) assert.equal(response?.statusCode, 200, response?.body);
    const nonces = await Promise.all(
      sends.map(async (r) => (await f.anvil.getTransaction({ hash: r?.json().signature as Hex })).nonce),
    );
    assert.deepEqual(
      [...nonces].sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, i) => i),
    );
    assert.equal(await f.anvil.getTransactionCount({ address: payer.wallet as Hex }), 20);
    assert.equal(await f.chain.getBalance(recipient.wallet), ETH);
  });
});
