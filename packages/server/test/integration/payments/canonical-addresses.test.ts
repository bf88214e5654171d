import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { tempSqlite } from '../../support/databases.ts';
import { newEvmLocalWallet } from '../../support/evm-local-signer.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from '../../support/evm-payment-fixture.ts';
import { watchAddress } from '../../support/proof-of-control.ts';
import { evmExactRequirements, evmPayload } from '../../support/x402-buyer.ts';

const lower = (address: string) => address.toLowerCase();
const upper = (address: string) => `0x${address.slice(2).toUpperCase()}`;
/** A whole value that is an EVM address, in any case. */
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Addresses have one spelling inside (EIP-55 on EVM), whatever case a caller typed: a workload through
 * every route that takes an address, each given in lower or upper case, and then every column of every
 * table of the real database read back. A value that is an EVM address anywhere must be checksummed;
 * and the address-holding columns this workload fills must have been seen, so the check saw something.
 */
describe('EVM addresses are stored in one spelling, whatever case they were sent in', () => {
  const storage = tempSqlite();
  let f: EvmPaymentFixture;
  let buyer: EvmParty;
  let seller: { accountId: string; key: string };
  const sellerKey = newEvmLocalWallet();
  const localPayer = newEvmLocalWallet();

  before(async () => {
    f = await startEvmPaymentFixture({ gateway: { storage } });
    await f.gw.services.facilitator.start();
    buyer = await f.party(ETH, 'premium');
    seller = await f.gw.newCaller('premium');
    await f.chain.faucet?.fundNative(sellerKey.address, ETH);
    await f.chain.faucet?.fundNative(localPayer.address, ETH);
  });
  after(() => f.close());

  it('registers, sends, receives, builds, settles and finds history under lower- and upper-case spellings', async () => {
    const watched = await watchAddress(f.gw, seller.key, sellerKey, { spelling: lower(sellerKey.address) });
    assert.equal(watched.statusCode, 200, watched.body);
    assert.equal(watched.json().address, sellerKey.address);

    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: lower(buyer.wallet),
      recipientAddress: upper(sellerKey.address),
      amount: 0.01,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    assert.equal(sent.json().recipient, sellerKey.address);

    // The bug found: a receive for the lower-case spelling was stored as typed, and history (which
    // looks the checksummed one up) showed none of it.
    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: lower(sellerKey.address),
      paymentProof: sent.json().paymentProof,
      expectedAmount: 0.01,
    });
    assert.equal(received.statusCode, 200, received.body);
    for (const spelling of [lower(sellerKey.address), upper(sellerKey.address), sellerKey.address]) {
      const history = await f.get(seller.key, `/payment/history/${spelling}`);
      assert.equal(history.statusCode, 200, history.body);
      assert.equal(history.json().walletAddress, sellerKey.address, spelling);
      assert.deepEqual(
        history.json().payments.map((p: { paymentId: string }) => p.paymentId),
        [received.json().paymentId],
        spelling,
      );
    }
    const buyerHistory = await f.get(buyer.key, `/payment/history/${upper(buyer.wallet)}?type=sent`);
    assert.equal(buyerHistory.json().total, 1, buyerHistory.body);

    const secondSend = await f.post(buyer.key, '/payment/send', {
      walletAddress: upper(buyer.wallet),
      recipientAddress: lower(sellerKey.address),
      amount: 0.002,
    });
    assert.equal(secondSend.statusCode, 200, secondSend.body);
    const receipt = await f.post(seller.key, '/transaction/receive', {
      walletAddress: upper(sellerKey.address),
      paymentProof: secondSend.json().paymentProof,
      expectedAmount: 0.002,
    });
    assert.equal(receipt.statusCode, 200, receipt.body);

    const built = await f.post(seller.key, '/transaction/send', {
      walletAddress: lower(localPayer.address),
      recipientAddress: upper(buyer.wallet),
      amount: 0.001,
    });
    assert.equal(built.statusCode, 200, built.body);

    // x402 through the built-in facilitator, payTo and payer in lower case.
    const x402Buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await f.post(seller.key, '/faucet', {
      address: lower(x402Buyer.address),
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.statusCode, 200, funded.body);
    const requirements = evmExactRequirements(f.evm, { amount: '20000', payTo: lower(sellerKey.address) });
    const settled = await f.post(seller.key, '/facilitator/settle', {
      x402Version: 2,
      paymentPayload: await evmPayload(x402Buyer, requirements),
      paymentRequirements: requirements,
    });
    assert.equal(settled.json().success, true, settled.body);
  });

  it('refuses a mixed-case address whose checksum is wrong (a typo) instead of reading it as some address', async () => {
    // The case of its last letter flipped (a random address need not end in a letter).
    const at = sellerKey.address.search(/[a-fA-F][0-9]*$/);
    assert.ok(at > 1, 'the address has a letter');
    const typo = `${sellerKey.address.slice(0, at)}${flipCase(sellerKey.address[at] ?? '')}${sellerKey.address.slice(at + 1)}`;
    for (const res of [
      await f.get(seller.key, `/payment/history/${typo}`),
      await f.post(seller.key, '/payment/receive', {
        walletAddress: typo,
        paymentProof: '0x00',
        expectedAmount: 0.01,
      }),
    ]) {
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.equal(
        res.json().error.details.walletAddress,
        'mixes upper and lower case, but not as its EIP-55 checksum does (a typo?)',
      );
    }
  });

  it('holds every EVM address in every column of every table checksummed (EIP-55)', async () => {
    const db = new Database(storage.location.kind === 'sqlite' ? storage.location.file : '', {
      readonly: true,
      fileMustExist: true,
    });
    try {
      const tables = db
        .prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`)
        .pluck()
        .all() as string[];
      const seen = new Set<string>();
      const wrong: string[] = [];
      const check = (where: string, value: unknown) => {
        if (typeof value !== 'string' || !EVM_ADDRESS.test(value)) return;
        seen.add(where);
        if (value !== getAddress(value)) wrong.push(`${where} = ${value}`);
      };
      for (const table of tables) {
        const columns = db.prepare(`select name from pragma_table_info(?)`).pluck().all(table) as string[];
        for (const row of db.prepare(`select * from "${table}"`).all() as Record<string, unknown>[]) {
          for (const column of columns) check(`${table}.${column}`, row[column]);
        }
      }
      // The outbox carries addresses inside its JSON: what the stream and webhooks send.
      const walk = (path: string, value: unknown): void => {
        if (Array.isArray(value)) for (const item of value) walk(path, item);
        else if (value !== null && typeof value === 'object')
          for (const [key, inner] of Object.entries(value)) walk(`${path}.${key}`, inner);
        else check(path, value);
      };
      for (const data of db.prepare('select data from events').pluck().all() as string[])
        walk('events.data', JSON.parse(data));
      assert.deepEqual(wrong, [], 'addresses stored in another spelling');
      for (const column of [
        'wallets.address',
        'wallet_challenges.address',
        'payments.sender',
        'payments.recipient',
        'payments.wallet_address',
        'wallet_nonces.address',
        'x402_settlements.payer',
        'x402_settlements.pay_to',
        'events.data.sender',
        'events.data.recipient',
      ]) {
        assert.ok(seen.has(column), `no EVM address was seen in ${column}: ${[...seen].join(', ')}`);
      }
    } finally {
      db.close();
    }
  });
});

function flipCase(char: string): string {
  return char === char.toUpperCase() ? char.toLowerCase() : char.toUpperCase();
}
