import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GatewayError } from '../../../src/domain/gateway-error.ts';
import { newId } from '../../../src/domain/ids.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import { SpendGuard, type SpendIntent } from '../../../src/services/spending/spend-guard.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';

const USDC = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

/**
 * SpendGuard's atomicity where it matters most: several gateway instances on one PostgreSQL database,
 * each with its own connection pool, charging one account's daily cap at once — and SQLite's one writer.
 * No chain: the guard sees only the store, and each spend is recorded with its payment in one
 * transaction, as every spending path does.
 */
const kinds: { name: string; skip: string | false; make(): Promise<TempStorage>; instances: number }[] = [
  { name: 'SQLite', skip: false, make: async () => tempSqlite(), instances: 1 },
  { name: 'PostgreSQL, three instances', skip: SKIP_POSTGRES, make: tempPostgres, instances: 3 },
];

for (const kind of kinds) {
  describe(`SpendGuard on ${kind.name}`, { skip: kind.skip }, () => {
    let storage: TempStorage;
    let stores: Store[];
    let guards: SpendGuard[];

    before(async () => {
      storage = await kind.make();
      stores = [];
      for (let i = 0; i < kind.instances; i++) stores.push((await openStore(storage.location)).store);
      guards = stores.map((store) => new SpendGuard({ store }));
    });
    after(async () => {
      for (const store of stores) await store.close();
      await storage.dispose();
    });

    async function account(): Promise<string> {
      const id = newId('acct');
      const at = Date.now();
      await stores[0]?.accounts.insert({
        id,
        name: 'spender',
        plan: 'standard',
        customRateLimit: null,
        createdAt: at,
        updatedAt: at,
      });
      return id;
    }

    /** One spend as a spending path makes it: the guard's charge and the payment, in one transaction. */
    async function spend(
      instance: number,
      intent: SpendIntent,
      status = 'pending' as const,
    ): Promise<string> {
      const store = stores[instance % stores.length] as Store;
      const guard = guards[instance % guards.length] as SpendGuard;
      const paymentId = newId('pay');
      await store.transaction(async (tx) => {
        await guard.chargeIn(tx, intent, paymentId);
        await tx.payments.insert(
          newPayment(Date.now(), {
            id: paymentId,
            accountId: intent.accountId,
            direction: 'sent',
            mode: 'custodial',
            status,
            network: intent.network,
            walletAddress: 'WALLET',
            sender: 'WALLET',
            recipient: intent.recipient,
            amount: intent.amount,
          }),
        );
      });
      return paymentId;
    }

    const RECIPIENT = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
    const intentOf = (accountId: string, keyId: string | null, amount: bigint): SpendIntent => ({
      accountId,
      keyId,
      network: 'eip155:31337',
      asset: { address: USDC.toLowerCase(), decimals: 6, symbol: 'USDC' },
      amount,
      recipient: RECIPIENT,
      resource: null,
      payee: 'named',
    });

    it('lets 40 concurrent spends over every instance take exactly the room of an account cap one unit short of all', async () => {
      const accountId = await account();
      const at = Date.now();
      await stores[0]?.spending.putPolicy({
        accountId,
        keyId: null,
        limits: [
          {
            network: 'eip155:31337',
            asset: USDC,
            symbol: 'USDC',
            decimals: 6,
            maxPerPayment: null,
            maxPerDay: 40n * 250_000n - 1n,
          },
        ],
        allowedRecipients: null,
        allowedHosts: null,
        allowedNetworks: null,
        expiresAt: null,
        createdAt: at,
        updatedAt: at,
      });
      // Two keys (and the dashboard) of one account, spread over the instances, all at once.
      const keys = ['key_A', 'key_B', null];
      const outcomes = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) => spend(i, intentOf(accountId, keys[i % 3] ?? null, 250_000n))),
      );
      const refused = outcomes.filter((o) => o.status === 'rejected');
      assert.equal(outcomes.length - refused.length, 39);
      assert.equal(refused.length, 1);
      const error = (refused[0] as PromiseRejectedResult).reason;
      assert.ok(error instanceof GatewayError, String(error));
      assert.equal(error.code, 'SPEND_LIMIT_EXCEEDED');
      assert.equal(error.details?.remaining, '0.249999 USDC');
      // Exactly 39 spends and 39 payments were recorded: the refused transaction left nothing.
      const spends = await stores[0]?.spending.spentSince(accountId, 'eip155:31337', USDC, 0);
      assert.equal(spends?.length, 39);
      assert.equal(
        spends?.reduce((sum, s) => sum + s.amount, 0n),
        39n * 250_000n,
      );
    });

    it('frees the room of a spend whose payment failed, and holds a key cap apart from the account', async () => {
      const accountId = await account();
      const at = Date.now();
      await stores[0]?.spending.putPolicy({
        accountId,
        keyId: 'key_A',
        limits: [
          {
            network: 'eip155:31337',
            asset: USDC,
            symbol: 'USDC',
            decimals: 6,
            maxPerPayment: null,
            maxPerDay: 1_000_000n,
          },
        ],
        allowedRecipients: null,
        allowedHosts: null,
        allowedNetworks: null,
        expiresAt: null,
        createdAt: at,
        updatedAt: at,
      });
      const first = await spend(0, intentOf(accountId, 'key_A', 1_000_000n));
      await assert.rejects(spend(1, intentOf(accountId, 'key_A', 1n)), { code: 'SPEND_LIMIT_EXCEEDED' });
      // Another key of the account is not bound by key_A's cap.
      await spend(1, intentOf(accountId, 'key_B', 5_000_000n));
      const payment = await stores[0]?.payments.get(first);
      assert.ok(payment !== undefined);
      await stores[0]?.payments.transition(
        payment.id,
        ['pending'],
        'failed',
        { error: 'reverted' },
        Date.now(),
      );
      await spend(2, intentOf(accountId, 'key_A', 1_000_000n));
    });

    it('refuses one atomic unit above maxPerPayment, another network, and a host not listed; allows what is exactly at the cap', async () => {
      const accountId = await account();
      const at = Date.now();
      await stores[0]?.spending.putPolicy({
        accountId,
        keyId: null,
        limits: [
          {
            network: 'eip155:31337',
            asset: USDC,
            symbol: 'USDC',
            decimals: 6,
            maxPerPayment: 2_500_000n,
            maxPerDay: null,
          },
        ],
        allowedRecipients: [RECIPIENT],
        allowedHosts: ['api.example.com', '*.shop.example'],
        allowedNetworks: ['eip155:31337'],
        expiresAt: null,
        createdAt: at,
        updatedAt: at,
      });
      const paid = (amount: bigint, resource: string | null, network = 'eip155:31337') =>
        spend(0, { ...intentOf(accountId, 'key_A', amount), resource, network });
      await assert.rejects(paid(2_500_001n, 'https://api.example.com/x'), (error: GatewayError) => {
        assert.equal(error.code, 'SPEND_LIMIT_EXCEEDED');
        assert.deepEqual(error.details, {
          limit: 'maxPerPayment',
          policy: 'account',
          max: '2.5 USDC',
          remaining: '2.5 USDC',
        });
        return true;
      });
      await paid(2_500_000n, 'https://API.example.com./x');
      await paid(1n, 'https://a.b.shop.example/item');
      for (const resource of [
        null,
        'https://example.com/',
        'https://shop.example/',
        'https://api.example.com.evil.test/',
        'ftp://api.example.com/',
      ]) {
        await assert.rejects(paid(1n, resource), {
          code: 'SPEND_NOT_ALLOWED',
          details: { limit: 'allowedHosts', policy: 'account' },
        });
      }
      await assert.rejects(paid(1n, 'https://api.example.com/', 'eip155:8453'), {
        code: 'SPEND_NOT_ALLOWED',
        details: { limit: 'allowedNetworks', policy: 'account' },
      });
    });

    it('allowedHosts without allowedRecipients refuses a recipient the request names, whatever resource it names; a refund is judged by its resource', async () => {
      const accountId = await account();
      const at = Date.now();
      await stores[0]?.spending.putPolicy({
        accountId,
        keyId: null,
        limits: null,
        allowedRecipients: null,
        allowedHosts: ['api.example.com'],
        allowedNetworks: null,
        expiresAt: null,
        createdAt: at,
        updatedAt: at,
      });
      const allowedResource = 'https://api.example.com/report';
      await assert.rejects(
        spend(1, { ...intentOf(accountId, 'key_A', 1n), resource: allowedResource }),
        (error: GatewayError) => {
          assert.equal(error.code, 'SPEND_NOT_ALLOWED');
          assert.deepEqual(error.details, { limit: 'allowedHosts', policy: 'account' });
          assert.match(error.message, /allowedRecipients/);
          return true;
        },
      );
      // A refund pays back the payer the gateway recorded: the host of what it refunds is judged.
      const refund = { ...intentOf(accountId, 'key_A', 1n), payee: 'refund' as const };
      await spend(1, { ...refund, resource: allowedResource });
      await assert.rejects(spend(1, { ...refund, resource: 'https://other.example/report' }), {
        code: 'SPEND_NOT_ALLOWED',
        details: { limit: 'allowedHosts', policy: 'account' },
      });
      // The same policy listing the recipient lets the named payment through on an allowed host.
      await stores[0]?.spending.putPolicy({
        accountId,
        keyId: null,
        limits: null,
        allowedRecipients: [RECIPIENT],
        allowedHosts: ['api.example.com'],
        allowedNetworks: null,
        expiresAt: null,
        createdAt: at,
        updatedAt: Date.now(),
      });
      await spend(1, { ...intentOf(accountId, 'key_A', 1n), resource: allowedResource });
    });
  });
}
