import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { address, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import Database from 'better-sqlite3';
import { listedTokens } from '../../../src/chains/extra-tokens.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { callAs } from '../../support/api-caller.ts';
import { tempSqlite } from '../../support/databases.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { createToken2022WithMetadata, mintToken2022 } from '../../support/token-2022-mint.ts';
import { svmExactRequirements, svmPayload } from '../../support/x402-buyer.ts';

/**
 * X402_EXTRA_ASSETS: the operator's tokens beyond a network's own known ones. The built-in facilitator
 * settles exactly the listed mints: a listed one is verified and settled on the localnet like USDC, an
 * unlisted one (however it names itself) is refused `unsupported_asset` with nothing settled.
 */

const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
const PYUSD = '2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo';
const BASE = 'eip155:8453';
const EURC_BASE = '0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42';

function problemsOf(value: string): readonly string[] {
  try {
    loadConfig({ X402_EXTRA_ASSETS: value });
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail(`X402_EXTRA_ASSETS=${value} was accepted`);
}

describe('X402_EXTRA_ASSETS', () => {
  it('reads {CAIP-2 id: {symbol: address}}; unset lists nothing', () => {
    assert.deepEqual(loadConfig({}).x402ExtraAssets, []);
    assert.deepEqual(
      loadConfig({ X402_EXTRA_ASSETS: JSON.stringify({ [SOLANA]: { PYUSD }, [BASE]: { EURC: EURC_BASE } }) })
        .x402ExtraAssets,
      [
        { network: SOLANA, symbol: 'PYUSD', address: PYUSD },
        { network: BASE, symbol: 'EURC', address: EURC_BASE },
      ],
    );
    assert.deepEqual(loadConfig({ X402_EXTRA_ASSETS: '{}' }).x402ExtraAssets, []);
  });

  it('names every bad value', () => {
    const cases: [string, RegExp][] = [
      ['not json', /^X402_EXTRA_ASSETS: must be a JSON object such as/],
      ['[]', /^X402_EXTRA_ASSETS: must be a JSON object of CAIP-2 id → \{symbol: address\}$/],
      ['"PYUSD"', /^X402_EXTRA_ASSETS: must be a JSON object of CAIP-2 id/],
      ['null', /^X402_EXTRA_ASSETS: must be a JSON object of CAIP-2 id/],
      [`{"solana":{"PYUSD":"${PYUSD}"}}`, /^X402_EXTRA_ASSETS: "solana" is not a CAIP-2 id/],
      [`{"${SOLANA}":"${PYUSD}"}`, /the tokens of solana:5eykt.* must be an object of symbol → address$/],
      [`{"${SOLANA}":["${PYUSD}"]}`, /the tokens of solana:5eykt.* must be an object of symbol → address$/],
      [`{"${SOLANA}":{"":"${PYUSD}"}}`, /"" of solana:5eykt.* is not a token symbol/],
      [`{"${SOLANA}":{"PY USD":"${PYUSD}"}}`, /"PY USD" of solana:5eykt.* is not a token symbol/],
      [`{"${SOLANA}":{"ABCDEFGHIJKLMNOPQ":"${PYUSD}"}}`, /"ABCDEFGHIJKLMNOPQ" of .* is not a token symbol/],
      [
        `{"${SOLANA}":{"PYUSD":"${EURC_BASE}"}}`,
        /PYUSD of solana:5eykt.* must be a mint \(base58\) address$/,
      ],
      [`{"${SOLANA}":{"PYUSD":"0OIl${PYUSD.slice(4)}"}}`, /PYUSD of solana:5eykt.* must be a mint/],
      [`{"${SOLANA}":{"PYUSD":42}}`, /PYUSD of solana:5eykt.* must be a mint \(base58\) address$/],
      [`{"${BASE}":{"EURC":"${PYUSD}"}}`, /EURC of eip155:8453 must be a contract \(0x…\) address$/],
      [`{"${BASE}":{"EURC":"${EURC_BASE.slice(0, 41)}"}}`, /EURC of eip155:8453 must be a contract/],
    ];
    for (const [value, expected] of cases) {
      const problems = problemsOf(value);
      assert.equal(problems.length, 1, `${value}: ${problems.join('; ')}`);
      assert.match(problems[0] ?? '', expected, value);
    }
  });
});

describe('X402_EXTRA_ASSETS on the localnet: a listed mint is settled, an unlisted one refused', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let db: Database.Database;
  let seller: { key: string; wallet: string };
  let buyer: KeyPairSigner;
  let feePayer: string;
  /** Listed by the operator as GOLD. */
  let gold: string;
  /** Not listed: named "Gold" too, same decimals, minted by the buyer. */
  let fake: string;

  const traces = () =>
    ['payments', 'consumed_proofs', 'x402_settlements', 'events'].map(
      (t) => (db.prepare(`select count(*) as n from ${t}`).get() as { n: number }).n,
    );
  const payIn = async (mint: string, atomic: bigint) =>
    encodePaymentSignatureHeader(
      await svmPayload(chain, buyer, {
        ...svmExactRequirements(chain, { amount: atomic.toString(), payTo: seller.wallet, feePayer }),
        asset: mint,
      }),
    );
  const balanceOf = async (owner: string, mint: string) =>
    (await chain.adapter.getTokenAccounts(owner)).find((a) => a.mint === mint)?.amount ?? 0n;

  before(async () => {
    chain = await startTestChain();
    const operator = await generateKeyPairSigner();
    buyer = await generateKeyPairSigner();
    chain.localnet.airdrop(operator.address, 1_000_000_000n);
    chain.localnet.airdrop(buyer.address, 1_000_000_000n);
    chain.localnet.advanceSlots(1);
    const meta = { name: 'Gold', symbol: 'GOLD', uri: 'https://gold.example/gold.json', decimals: 6 };
    gold = (
      await createToken2022WithMetadata(chain.localnet.rpcUrl, operator, meta, () =>
        chain.localnet.advanceSlots(1),
      )
    ).mint;
    fake = (
      await createToken2022WithMetadata(chain.localnet.rpcUrl, buyer, meta, () =>
        chain.localnet.advanceSlots(1),
      )
    ).mint;

    // What the start checks, with the listing server.ts builds from the configuration.
    const network = chain.adapter.info.id;
    await assert.rejects(
      listedTokens([{ network: 'solana:nowhere', symbol: 'GOLD', address: gold }], [chain.adapter]),
      /X402_EXTRA_ASSETS lists GOLD for solana:nowhere, which is not configured/,
    );
    await assert.rejects(
      listedTokens([{ network, symbol: 'GOLD', address: operator.address }], [chain.adapter]),
      /X402_EXTRA_ASSETS: .* is not a token on Solana Localnet/,
    );
    for (const taken of ['usdc', 'SOL']) {
      await assert.rejects(
        listedTokens([{ network, symbol: taken, address: gold }], [chain.adapter]),
        new RegExp(`already has a token named ${taken}`),
      );
    }
    const listed = await listedTokens([{ network, symbol: 'GOLD', address: gold }], [chain.adapter]);
    assert.deepEqual(listed.get(network), [{ symbol: 'GOLD', address: gold, decimals: 6 }]);

    const storage = tempSqlite();
    gw = await startTestGateway({ storage, networks: new NetworkRegistry([chain.adapter], listed) });
    await gw.services.facilitator.start();
    if (storage.location.kind !== 'sqlite') throw new Error('the suite counts rows of its SQLite file');
    db = new Database(storage.location.file, { readonly: true, fileMustExist: true });
    const caller = await gw.newCaller('premium');
    const wallet = await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' });
    assert.equal(wallet.status, 200, JSON.stringify(wallet.body));
    seller = { key: caller.key, wallet: wallet.body.address };
    feePayer = gw.services.facilitator.feePayerOf(network) ?? '';
    chain.localnet.airdrop(feePayer, 1_000_000_000n);
    // x402 `exact` does not open the seller's token accounts: one unit of each mint does.
    await mintToken2022(chain.localnet.rpcUrl, operator, address(gold), buyer.address, 1_000_000n);
    await mintToken2022(chain.localnet.rpcUrl, operator, address(gold), address(seller.wallet), 1n);
    await mintToken2022(chain.localnet.rpcUrl, buyer, address(fake), buyer.address, 1_000_000n);
    await mintToken2022(chain.localnet.rpcUrl, buyer, address(fake), address(seller.wallet), 1n);
    chain.localnet.advanceSlots(1);
  });

  after(async () => {
    db?.close();
    await gw?.close();
    await chain?.close();
  });

  it('GET /networks lists the operator’s token with the decimals its mint states', async () => {
    const res = await callAs(gw, seller.key, 'GET', '/networks');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const localnet = res.body.networks.find((n: { id: string }) => n.id === chain.adapter.info.id);
    assert.deepEqual(
      localnet.tokens.find((t: { symbol: string }) => t.symbol === 'GOLD'),
      { symbol: 'GOLD', address: gold, decimals: 6 },
    );
  });

  it('verifies and settles a payment in the listed mint, named by symbol (any case) or address', async () => {
    const proof = await payIn(gold, 10_000n);
    const verified = await callAs(gw, seller.key, 'POST', '/v1/payments/verify', {
      payment_proof: proof,
      amount: 10_000,
      asset: gold,
      recipient: seller.wallet,
    });
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    assert.equal(verified.body.verified, true, JSON.stringify(verified.body));
    assert.deepEqual(verified.body.asset, { symbol: 'GOLD', address: gold, decimals: 6 });

    const before = await balanceOf(seller.wallet, gold);
    const received = await callAs(gw, seller.key, 'POST', '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: proof,
      expectedAmount: 0.01,
      asset: 'gold',
    });
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.equal(received.body.amountReceived, 0.01);
    assert.deepEqual(received.body.asset, { symbol: 'GOLD', address: gold, decimals: 6 });
    chain.localnet.advanceSlots(1);
    assert.equal(await balanceOf(seller.wallet, gold), before + 10_000n, 'paid on chain in the listed mint');
    const status = await callAs(gw, seller.key, 'GET', `/payment/status/${received.body.paymentId}`);
    assert.deepEqual(status.body.asset, { symbol: 'GOLD', address: gold, decimals: 6 });
  });

  it('refuses a mint the operator did not list, however it names itself: unsupported_asset, nothing settled', async () => {
    const proof = await payIn(fake, 10_000n);
    const before = traces();
    const balance = await balanceOf(seller.wallet, fake);

    // The seller names the unlisted mint itself: the price is valid, the facilitator settles no such mint.
    const received = await callAs(gw, seller.key, 'POST', '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: proof,
      expectedAmount: 0.01,
      asset: fake,
    });
    assert.equal(received.status, 422, JSON.stringify(received.body));
    assert.deepEqual(
      [received.body.error.code, received.body.error.details.paymentProof],
      ['PAYMENT_VERIFICATION_FAILED', 'unsupported_asset'],
    );
    const verified = await callAs(gw, seller.key, 'POST', '/v1/payments/verify', {
      payment_proof: proof,
      amount: 10_000,
      asset: fake,
      recipient: seller.wallet,
    });
    assert.deepEqual([verified.body.verified, verified.body.reason], [false, 'unsupported_asset']);
    // Priced in GOLD, it is another asset than asked.
    const asGold = await callAs(gw, seller.key, 'POST', '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: proof,
      expectedAmount: 0.01,
      asset: 'GOLD',
    });
    assert.deepEqual(
      [asGold.status, asGold.body.error.details.paymentProof],
      [422, 'asset_mismatch'],
      JSON.stringify(asGold.body),
    );

    // Straight to the facilitator, with requirements naming the unlisted mint.
    const body = {
      x402Version: 2,
      paymentPayload: JSON.parse(Buffer.from(proof, 'base64').toString('utf8')),
      paymentRequirements: {
        ...svmExactRequirements(chain, { amount: '10000', payTo: seller.wallet, feePayer }),
        asset: fake,
      },
    };
    const checked = await callAs(gw, seller.key, 'POST', '/facilitator/verify', body);
    assert.deepEqual([checked.body.isValid, checked.body.invalidReason], [false, 'unsupported_asset']);
    const settled = await callAs(gw, seller.key, 'POST', '/facilitator/settle', body);
    assert.deepEqual([settled.body.success, settled.body.errorReason], [false, 'unsupported_asset']);

    chain.localnet.advanceSlots(1);
    assert.equal(await balanceOf(seller.wallet, fake), balance, 'nothing moved on chain');
    assert.deepEqual(traces(), before, 'no payment, consumed proof, settlement or event');
  });
});
