import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { USDC_LIKE_ABI, USDC_LIKE_BYTECODE } from '@gate402/anvil';
import { address, generateKeyPairSigner } from '@solana/kit';
import { createTestClient, getAddress, type Hex, http, publicActions, walletActions } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { EvmAdapter } from '../../../src/chains/evm/evm-adapter.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { RpcEndpoints } from '../../../src/chains/rpc-endpoints.ts';
import { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { callerOf } from '../../support/api-caller.ts';
import { evmFamily, solanaFamily } from '../../support/chain-family.ts';
import type { FamilyPaymentFixture } from '../../support/family-fixtures.ts';
import { type FaultMode, type FaultProxy, startFaultProxy } from '../../support/fault-proxy.ts';
import { newParty, type Party } from '../../support/party.ts';
import { startTestEvm } from '../../support/test-anvil.ts';
import { startTestGateway } from '../../support/test-gateway.ts';
import { startTestChain } from '../../support/test-localnet.ts';
import {
  createRestrictedToken2022,
  createToken2022WithMetadata,
  mintToken2022,
  type RestrictingExtension,
} from '../../support/token-2022-mint.ts';

/** One USDC in atomic units (6 decimals on both chains). */
const USDC = 1_000_000n;

/**
 * A gateway on one embedded chain whose RPC traffic goes through a fault proxy (so a broadcast can be
 * lost on the way), with the chain's USDC and the money reads a token test needs.
 */
interface TokenFixture {
  readonly f: FamilyPaymentFixture;
  /** EVM: a second ERC-20 the operator lists (X402_EXTRA_ASSETS) as EURC, and mints it to `to`. */
  readonly extra?: { readonly address: string; mint(to: string, amount: bigint): Promise<void> };
  readonly adapter: ChainAdapter;
  readonly proxy: FaultProxy;
  readonly usdc: string;
  fundToken(wallet: string, amount: bigint): Promise<void>;
  tokenBalance(wallet: string): Promise<bigint>;
  reconciler(): PaymentReconciler;
  close(): Promise<void>;
}

interface TokenFamily {
  readonly name: string;
  readonly native: string;
  /** Another family's native symbol: a symbol the network does not list. */
  readonly foreignSymbol: string;
  /** An address of the other family: never an asset of this network. */
  readonly foreignAddress: string;
  /** What drops broadcasts at the proxy, and nothing else. */
  readonly broadcastFault: FaultMode;
  start(): Promise<TokenFixture>;
  familyTests(fixture: () => TokenFixture): void;
}

function tokenSends(family: TokenFamily): void {
  describe(`token sends on ${family.name}: POST /payment/send and /transaction/send with asset`, {
    timeout: 120_000,
  }, () => {
    let t: TokenFixture;
    let f: FamilyPaymentFixture;
    let buyer: Party;
    let unit: bigint;

    before(async () => {
      t = await family.start();
      f = t.f;
      unit = f.family.unit;
      buyer = await f.party(unit);
      await t.fundToken(buyer.wallet, 100n * USDC);
    });
    after(() => t.close());

    const send = (payer: Party, body: Record<string, unknown>, headers?: Record<string, string>) =>
      f.post(payer.key, '/payment/send', { walletAddress: payer.wallet, ...body }, headers);
    const sentCount = async (payer: Party) =>
      (await f.get(payer.key, `/payment/history/${payer.wallet}?type=sent`)).json().total as number;
    const usdcAsset = () => ({ symbol: 'USDC', address: t.usdc, decimals: 6 });

    it('sends USDC to a wallet that holds none yet: opens its token account, the sender paying it in `fee`; exact balances on both sides', async () => {
      const seller = await f.party();
      const [tokensBefore, nativeBefore] = await Promise.all([
        t.tokenBalance(buyer.wallet),
        f.family.balance(buyer.wallet),
      ]);
      const res = await send(buyer, { recipientAddress: seller.wallet, amount: 2.5, asset: 'usdc' });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.status, 'confirmed');
      assert.equal(body.amount, 2.5);
      assert.deepEqual(body.asset, usdcAsset());
      assert.equal(body.network, f.network);
      assert.equal(await t.tokenBalance(seller.wallet), 2_500_000n);
      assert.equal(await t.tokenBalance(buyer.wallet), tokensBefore - 2_500_000n);
      // The fees (and the opening) are paid in the native currency, never more than the answer says.
      const spent = nativeBefore - (await f.family.balance(buyer.wallet));
      const fee = BigInt(Math.round(body.fee * Number(unit)));
      assert.ok(spent > 0n && spent <= fee, `spent ${spent}, fee stated ${fee}`);
    });

    it('shows the asset in status, history and events; the seller receives the proof in USDC only, once', async () => {
      const seller = await f.party();
      const sent = (
        await send(buyer, { recipientAddress: seller.wallet, amount: 1.25, asset: t.usdc })
      ).json();
      assert.deepEqual(sent.asset, usdcAsset());

      const status = (await f.get(buyer.key, `/payment/status/${sent.paymentId}`)).json();
      assert.equal(status.amount, 1.25);
      assert.deepEqual(status.asset, usdcAsset());
      const history = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent&limit=1`)).json();
      assert.equal(history.payments[0].paymentId, sent.paymentId);
      assert.deepEqual(history.payments[0].asset, usdcAsset());
      const events = await f.gw.store.events.listAfter(buyer.accountId, 0, 1000);
      const mine = events.filter((e) => e.paymentId === sent.paymentId);
      assert.deepEqual(
        mine.map((e) => e.type),
        ['payment.sent', 'payment.confirmed'],
      );
      for (const event of mine) assert.deepEqual((event.data as { asset: unknown }).asset, usdcAsset());

      const receive = (body: Record<string, unknown>) =>
        f.post(seller.key, '/payment/receive', {
          walletAddress: seller.wallet,
          paymentProof: sent.paymentProof,
          expectedAmount: 1.25,
          ...body,
        });
      // Asked in the native currency: a USDC proof pays none of it, and nothing is consumed.
      const native = await receive({});
      assert.equal(native.statusCode, 422, native.body);
      assert.equal(native.json().error.details.paymentProof, 'asset_mismatch');
      const tooMuch = await receive({ asset: 'USDC', expectedAmount: 1.250001 });
      assert.equal(tooMuch.json().error.details.paymentProof, 'amount_too_low');
      const received = await receive({ asset: 'USDC' });
      assert.equal(received.statusCode, 200, received.body);
      assert.equal(received.json().amountReceived, 1.25);
      assert.deepEqual(received.json().asset, usdcAsset());
      const again = await receive({ asset: 'USDC' });
      assert.equal(again.json().error.details.paymentProof, 'already_used');
    });

    it('refuses a send of one atomic unit more than the token balance with INSUFFICIENT_BALANCE naming USDC; nothing is signed or recorded', async () => {
      const payer = await f.party(unit);
      await t.fundToken(payer.wallet, 3n * USDC);
      const seller = await f.party();
      const res = await send(payer, { recipientAddress: seller.wallet, amount: 3.000001, asset: 'USDC' });
      assert.equal(res.statusCode, 422, res.body);
      const { error } = res.json();
      assert.equal(error.code, 'INSUFFICIENT_BALANCE');
      assert.match(
        error.message,
        /Not enough USDC: the payment needs 3\.000001 USDC; the wallet holds 3 USDC/,
      );
      assert.equal(error.details.asset, `USDC ${t.usdc}`);
      assert.equal(await sentCount(payer), 0);
      assert.equal(await t.tokenBalance(payer.wallet), 3n * USDC);
      // Exactly the balance is fine.
      const all = await send(payer, { recipientAddress: seller.wallet, amount: 3, asset: 'USDC' });
      assert.equal(all.statusCode, 200, all.body);
      assert.equal(await t.tokenBalance(payer.wallet), 0n);
    });

    it(`refuses a token send from a wallet without ${family.native} for the fees, naming ${family.native}; nothing is recorded`, async () => {
      const payer = await f.party();
      await t.fundToken(payer.wallet, 5n * USDC);
      const seller = await f.party();
      const res = await send(payer, { recipientAddress: seller.wallet, amount: 1, asset: 'USDC' });
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
      assert.match(res.json().error.message, new RegExp(`the network fees .* need [0-9.]+ ${family.native}`));
      assert.equal(await sentCount(payer), 0);
      assert.equal(await t.tokenBalance(payer.wallet), 5n * USDC);
    });

    it('refuses an asset the network does not have with 400 naming `asset`, before anything is signed or recorded', async () => {
      const seller = await f.party();
      const before = await sentCount(buyer);
      const cases: [string, RegExp][] = [
        ['DOGE', /must be .*USDC.* or a token address/],
        [family.foreignSymbol, /must be .*USDC.* or a token address/],
        [family.foreignAddress, /must be .*USDC.* or a token address/],
        // An address of the network that is no token: a fresh one, and a wallet that holds money.
        [f.family.newAddress(), /is not a token on/],
        [buyer.wallet, /is not a token on/],
      ];
      for (const [asset, message] of cases) {
        const res = await send(buyer, { recipientAddress: seller.wallet, amount: 1, asset });
        assert.equal(res.statusCode, 400, `${asset}: ${res.body}`);
        assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
        assert.match(res.json().error.details.asset, message, asset);
      }
      assert.equal(await sentCount(buyer), before);
      assert.equal(await t.tokenBalance(seller.wallet), 0n);
    });

    it("reads the amount in the asset's decimals and bounds: one decimal too many, below and above the bounds are 400 naming `amount`", async () => {
      const seller = await f.party();
      const before = await sentCount(buyer);
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ amount: 0.0000015, asset: 'USDC' }, /more than 6 decimal places \(USDC has 6 decimals\)/],
        [{ amount: 0.0009, asset: 'USDC' }, /^must be between 0\.001 and 100000 USDC$/],
        [{ amount: 100_000.5, asset: 'USDC' }, /^must be between 0\.001 and 100000 USDC$/],
        // The native currency keeps the spec's bounds.
        [{ amount: 100.5 }, /^must be between 0\.001 and 100$/],
        [{ amount: 0.0005, asset: family.native }, /^must be between 0\.001 and 100$/],
      ];
      for (const [body, message] of cases) {
        const res = await send(buyer, { recipientAddress: seller.wallet, ...body });
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
        assert.match(res.json().error.details.amount, message, JSON.stringify(body));
      }
      assert.equal(await sentCount(buyer), before);
    });

    it('answers a retry with the same Idempotency-Key with the same payment: the tokens move once', async () => {
      const seller = await f.party();
      const headers = { 'idempotency-key': `token-${Date.now()}` };
      const body = { recipientAddress: seller.wallet, amount: 0.75, asset: 'USDC' };
      const first = await send(buyer, body, headers);
      const second = await send(buyer, body, headers);
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(second.json().paymentId, first.json().paymentId);
      assert.deepEqual(second.json().asset, usdcAsset());
      const different = await send(buyer, { ...body, amount: 0.76 }, headers);
      assert.equal(different.statusCode, 422, different.body);
      assert.equal(await t.tokenBalance(seller.wallet), 750_000n);
    });

    it('finishes a token send whose broadcast was lost: stored bytes resent by the reconciler, the tokens move once', async () => {
      const seller = await f.party();
      t.proxy.set(family.broadcastFault);
      let sent: { paymentId: string; status: string; signature: string };
      try {
        const res = await send(buyer, { recipientAddress: seller.wallet, amount: 4, asset: 'USDC' });
        assert.equal(res.statusCode, 200, res.body);
        sent = res.json();
      } finally {
        t.proxy.set({ kind: 'pass' });
      }
      assert.equal(sent.status, 'pending');
      // The endpoint the lost broadcast marked down is tried again after its brief outage.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const stored = await f.gw.store.payments.get(sent.paymentId);
      assert.deepEqual(stored?.asset, { address: t.usdc, decimals: 6 });
      assert.equal(await t.tokenBalance(seller.wallet), 0n, 'nothing reached the chain');

      const reconciler = t.reconciler();
      for (let i = 0; i < 50; i++) {
        await reconciler.runOnce();
        const status = (await f.gw.store.payments.get(sent.paymentId))?.status;
        if (status === 'confirmed' || status === 'finalized') break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const done = await f.gw.store.payments.get(sent.paymentId);
      assert.ok(done?.status === 'confirmed' || done?.status === 'finalized', done?.status);
      assert.equal(done?.signature, sent.signature, 'the stored transaction, not a new one');
      await reconciler.runOnce();
      assert.equal(await t.tokenBalance(seller.wallet), 4n * USDC);
    });

    it('builds an unsigned token transfer in local mode; signed and broadcast by the caller, it confirms with its asset and its proof pays in USDC', async () => {
      const seller = await f.party();
      const caller = await f.gw.newCaller('standard');
      const own = await t.adapter.generateKeypair();
      await f.family.fund(own.address, unit);
      await t.fundToken(own.address, 10n * USDC);
      const built = await f.post(caller.key, '/transaction/send', {
        walletAddress: own.address,
        recipientAddress: seller.wallet,
        amount: 6,
        asset: 'USDC',
      });
      assert.equal(built.statusCode, 200, built.body);
      const b = built.json();
      assert.deepEqual(b.asset, usdcAsset());
      assert.equal(b.amount, 6);
      assert.ok(b.fee > 0);
      const short = await f.post(caller.key, '/transaction/send', {
        walletAddress: own.address,
        recipientAddress: seller.wallet,
        amount: 10.000001,
        asset: 'USDC',
      });
      assert.equal(short.statusCode, 422, short.body);

      const signed = await t.adapter.sign(
        {
          unsigned: new Uint8Array(Buffer.from(b.transaction, 'base64')),
          lastValidBlockHeight: BigInt(b.lastValidBlockHeight),
          fee: 0n,
          priorityFee: 0n,
          feePayer: own.address,
        },
        own.secretKey,
      );
      await t.adapter.broadcast(signed.wire);
      const reconciler = t.reconciler();
      for (let i = 0; i < 50; i++) {
        await reconciler.runOnce();
        const status = (await f.gw.store.payments.get(b.paymentId))?.status;
        if (status === 'confirmed' || status === 'finalized') break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const status = (await f.get(caller.key, `/payment/status/${b.paymentId}`)).json();
      assert.ok(['confirmed', 'finalized'].includes(status.status), status.status);
      assert.deepEqual(status.asset, usdcAsset());
      assert.equal(await t.tokenBalance(seller.wallet), 6n * USDC);

      const received = await f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: b.paymentProof,
        expectedAmount: 6,
        asset: 'USDC',
      });
      assert.equal(received.statusCode, 200, received.body);
      assert.equal(received.json().amountReceived, 6);
    });

    it('lists every token balance of a wallet in GET /wallets and GET /portfolio, with symbol and decimals', async () => {
      const holder = await f.party(unit);
      await t.fundToken(holder.wallet, 12_345_678n);
      const listed = (await f.get(holder.key, '/wallets')).json().wallets;
      assert.equal(listed.length, 1);
      assert.equal(listed[0].currency, family.native);
      assert.equal(listed[0].balance, 1);
      assert.deepEqual(listed[0].tokens, [
        { symbol: 'USDC', address: t.usdc, decimals: 6, balance: 12.345678, amount: '12345678' },
      ]);
      const empty = await f.party();
      assert.deepEqual((await f.get(empty.key, '/wallets')).json().wallets[0].tokens, []);
      const portfolio = (await f.get(holder.key, `/portfolio/${holder.wallet}`)).json();
      assert.deepEqual(
        portfolio.tokens.map((p: { symbol: string; mint: string; decimals: number; uiAmount: number }) => [
          p.symbol,
          p.mint,
          p.decimals,
          p.uiAmount,
        ]),
        [['USDC', t.usdc, 6, 12.345678]],
      );
    });

    family.familyTests(() => t);
  });
}

function solanaTokenTests(fixture: () => TokenFixture): void {
  /** A payer for the test's own mints, with SOL for their rent. */
  async function mintPayer() {
    const { f } = fixture();
    const payer = await generateKeyPairSigner();
    await f.family.fund(payer.address, 10n * f.family.unit);
    return payer;
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

  it("states the opening of the recipient's token account in `fee`: base fee plus the rent-exempt deposit, exactly what the sender pays; none once it exists", async () => {
    const t = fixture();
    const { f } = t;
    const payer = await f.party(f.family.unit);
    await t.fundToken(payer.wallet, 5n * USDC);
    const seller = await f.party();
    const before = await f.family.balance(payer.wallet);
    const first = (
      await f.post(payer.key, '/payment/send', {
        walletAddress: payer.wallet,
        recipientAddress: seller.wallet,
        amount: 1,
        asset: 'USDC',
      })
    ).json();
    // 5,000 lamports per signature, no priority fee on the localnet, 2,039,280 lamports for 165 bytes.
    assert.equal(first.fee, 0.00204428);
    const afterFirst = await f.family.balance(payer.wallet);
    assert.equal(before - afterFirst, 2_044_280n);
    const second = (
      await f.post(payer.key, '/payment/send', {
        walletAddress: payer.wallet,
        recipientAddress: seller.wallet,
        amount: 1,
        asset: 'USDC',
      })
    ).json();
    assert.equal(second.fee, 0.000005);
    assert.equal(afterFirst - (await f.family.balance(payer.wallet)), 5_000n);
    assert.equal(await t.tokenBalance(seller.wallet), 2n * USDC);
  });

  it('lets only one of two concurrent token sends that together exceed the token balance pay; the other is recorded failed and answered INSUFFICIENT_BALANCE naming USDC', async () => {
    const t = fixture();
    const { f } = t;
    const payer = await f.party(f.family.unit);
    await t.fundToken(payer.wallet, 10n * USDC);
    const seller = await f.party();
    const send = () =>
      f.post(payer.key, '/payment/send', {
        walletAddress: payer.wallet,
        recipientAddress: seller.wallet,
        amount: 6,
        asset: 'USDC',
      });
    const answers = await Promise.all([send(), send()]);
    const codes = answers.map((a) => a.statusCode).sort();
    assert.deepEqual(codes, [200, 422], answers.map((a) => a.body).join('\n'));
    // Both were counted against 10 USDC and signed (Solana has no sequence to count them in); the chain
    // refused the second, which is recorded failed and answered as the shortfall of USDC it is.
    const refused = answers.find((a) => a.statusCode === 422)?.json();
    assert.equal(refused.error.code, 'INSUFFICIENT_BALANCE');
    assert.equal(
      refused.error.message,
      'Not enough USDC: the payment needs 6 USDC, more than the wallet holds besides what its other sends are paying.',
    );
    const failed = await f.gw.store.payments.get(refused.error.details.paymentId);
    assert.equal(failed?.status, 'failed');
    assert.equal(await t.tokenBalance(seller.wallet), 6n * USDC, 'paid once');
    assert.equal(await t.tokenBalance(payer.wallet), 4n * USDC);
  });

  it('sends a Token-2022 token named by its mint: the recipient gets all of it in its Token-2022 account', async () => {
    const t = fixture();
    const { f } = t;
    const payer = await mintPayer();
    const { mint, authority } = await createToken2022WithMetadata(
      t.adapter.info.rpcUrl ?? '',
      payer,
      { name: 'Extended Dollar', symbol: 'XUSD', uri: 'https://example.com/xusd.json', decimals: 6 },
      () => {},
    );
    await settle();
    const buyer = await f.party(f.family.unit);
    await mintToken2022(t.adapter.info.rpcUrl ?? '', authority, mint, address(buyer.wallet), 9n * USDC);
    await settle();
    const seller = await f.party();
    const res = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 2.000001,
      asset: mint,
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, 'confirmed');
    assert.deepEqual(res.json().asset, { symbol: null, address: mint, decimals: 6 });
    assert.equal(await t.adapter.getTokenBalance(seller.wallet, mint), 2_000_001n);
    assert.equal(await t.adapter.getTokenBalance(buyer.wallet, mint), 9n * USDC - 2_000_001n);
    const holdings = await t.adapter.getTokenAccounts(seller.wallet);
    assert.deepEqual(
      holdings.map((h) => [h.mint, h.amount, h.program]),
      [[mint, 2_000_001n, 'spl-token-2022']],
    );
  });

  for (const [extension, message] of [
    [
      'transfer-fee',
      /cannot be sent: the mint has a transfer fee \(the recipient would get less than the amount\)/,
    ],
    ['transfer-hook', /cannot be sent: the mint has a transfer hook/],
    [
      'permanent-delegate',
      /cannot be sent: the mint has a permanent delegate \(the tokens could be taken back/,
    ],
    ['non-transferable', /cannot be sent: the mint has non-transferable tokens/],
  ] as [RestrictingExtension, RegExp][]) {
    it(`refuses a Token-2022 mint with ${extension} for sends and local builds, naming \`asset\`; nothing is recorded`, async () => {
      const t = fixture();
      const { f } = t;
      const payer = await mintPayer();
      const mint = await createRestrictedToken2022(t.adapter.info.rpcUrl ?? '', payer, extension, () => {});
      await settle();
      const buyer = await f.party(f.family.unit);
      const seller = await f.party();
      for (const path of ['/payment/send', '/transaction/send']) {
        const res = await f.post(buyer.key, path, {
          walletAddress: buyer.wallet,
          recipientAddress: seller.wallet,
          amount: 1,
          asset: mint,
        });
        assert.equal(res.statusCode, 400, `${path}: ${res.body}`);
        assert.match(res.json().error.details.asset, message);
      }
      const history = (await f.get(buyer.key, `/payment/history/${buyer.wallet}`)).json();
      assert.equal(history.total, 0);
    });
  }
}

function evmTokenTests(fixture: () => TokenFixture): void {
  it('shows and sends a token the operator lists (X402_EXTRA_ASSETS) by its symbol: GET /wallets, GET /portfolio, POST /payment/send', async () => {
    const t = fixture();
    const { f } = t;
    const extra = t.extra;
    assert.ok(extra);
    const holder = await f.party(f.family.unit);
    await extra.mint(holder.wallet, 7_000_000n);
    await t.fundToken(holder.wallet, 1_000_000n);
    const [wallet] = (await f.get(holder.key, '/wallets')).json().wallets;
    assert.deepEqual(
      wallet.tokens.map((x: { symbol: string; address: string; amount: string }) => [
        x.symbol,
        x.address,
        x.amount,
      ]),
      [
        ['EURC', extra.address, '7000000'],
        ['USDC', t.usdc, '1000000'],
      ],
    );
    const portfolio = (await f.get(holder.key, `/portfolio/${holder.wallet}`)).json();
    assert.deepEqual(portfolio.tokens.map((x: { symbol: string }) => x.symbol).sort(), ['EURC', 'USDC']);
    const seller = await f.party();
    const sent = await f.post(holder.key, '/payment/send', {
      walletAddress: holder.wallet,
      recipientAddress: seller.wallet,
      amount: 2,
      asset: 'eurc',
    });
    assert.equal(sent.statusCode, 200, sent.body);
    assert.deepEqual(sent.json().asset, { symbol: 'EURC', address: extra.address, decimals: 6 });
    assert.equal(await t.adapter.getTokenBalance(seller.wallet, extra.address), 2_000_000n);
  });

  it('gives concurrent token and native sends of one wallet consecutive nonces; two token sends that together exceed the token balance: one is refused, naming USDC', async () => {
    const t = fixture();
    const { f } = t;
    const payer = await f.party(f.family.unit);
    await t.fundToken(payer.wallet, 10n * USDC);
    const seller = await f.party();
    const send = (body: Record<string, unknown>) =>
      f.post(payer.key, '/payment/send', {
        walletAddress: payer.wallet,
        recipientAddress: seller.wallet,
        ...body,
      });
    const answers = await Promise.all([
      send({ amount: 6, asset: 'USDC' }),
      send({ amount: 6, asset: 'USDC' }),
      send({ amount: 0.01 }),
    ]);
    const codes = answers.map((a) => a.statusCode);
    assert.deepEqual(codes.slice(0, 2).sort(), [200, 422], answers.map((a) => a.body).join('\n'));
    assert.equal(codes[2], 200);
    const refused = answers.find((a) => a.statusCode === 422)?.json();
    // Refused when it is recorded (both unsettled: 12 of 10), or, once the other landed, when it is built.
    assert.match(
      refused.error.message,
      /Not enough USDC: the payment needs (12|6) USDC; the wallet holds (10|4) USDC/,
    );
    const paid = answers.filter((a) => a.statusCode === 200).map((a) => a.json().paymentId as string);
    const nonces = await Promise.all(paid.map(async (id) => (await f.gw.store.payments.get(id))?.nonce));
    assert.deepEqual(nonces.map(Number).sort(), [0, 1]);
    assert.equal(await t.tokenBalance(seller.wallet), 6n * USDC);
    assert.equal(await f.family.balance(seller.wallet), f.family.unit / 100n);
  });
}

/** The proxy's one endpoint, taken for down only briefly after a lost broadcast (the test's fault). */
function briefOutages(network: string, url: string): RpcEndpoints {
  return new RpcEndpoints({ network, urls: [url], timeoutMs: 5_000, downMs: 50 });
}

/**
 * Another instance of the USDC-like ERC-20 (owned by a fresh address anvil lets the test act as), for a
 * token the network does not know and the operator lists.
 */
async function deployExtraToken(
  rpcUrl: string,
): Promise<{ address: string; mint(to: string, amount: bigint): Promise<void> }> {
  const client = createTestClient({ mode: 'anvil', transport: http(rpcUrl), cacheTime: 0 })
    .extend(publicActions)
    .extend(walletActions);
  const owner = privateKeyToAccount(generatePrivateKey()).address;
  await client.impersonateAccount({ address: owner });
  await client.setBalance({ address: owner, value: 10n ** 18n });
  const deployed = await client.deployContract({
    abi: USDC_LIKE_ABI,
    bytecode: USDC_LIKE_BYTECODE as Hex,
    args: [owner],
    account: owner,
    chain: null,
  });
  const receipt = await client.waitForTransactionReceipt({ hash: deployed, pollingInterval: 20 });
  const address = getAddress(receipt.contractAddress ?? '');
  return {
    address,
    mint: async (to, amount) => {
      const hash = await client.writeContract({
        address: address as Hex,
        abi: USDC_LIKE_ABI,
        functionName: 'mint',
        args: [to as Hex, amount],
        account: owner,
        chain: null,
      });
      await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    },
  };
}

async function solanaFixture(): Promise<TokenFixture> {
  const chain = await startTestChain();
  const proxy = await startFaultProxy(chain.localnet.rpcUrl);
  const adapter = new SolanaAdapter({
    info: chain.adapter.info,
    rpcUrl: proxy.url,
    endpoints: briefOutages(chain.adapter.info.id, proxy.url),
    wsUrl: chain.localnet.wsUrl,
    faucet: chain.adapter.faucet,
    slotMs: 20,
  });
  const gw = await startTestGateway({ networks: new NetworkRegistry([adapter]) });
  const usdc = chain.localnet.usdcMint.address;
  const family = solanaFamily(chain.localnet, adapter);
  return {
    f: {
      ...callerOf(gw),
      gw,
      family,
      network: adapter.info.id,
      native: adapter.info.nativeCurrency,
      party: (amount = 0n, plan = 'standard') =>
        newParty(gw, 'solana', {
          plan,
          ...(amount > 0n ? { fund: (wallet) => adapter.faucet?.fundNative(wallet, amount) } : {}),
        }),
    },
    adapter,
    proxy,
    usdc,
    fundToken: async (wallet, amount) => {
      await adapter.faucet?.fundToken('USDC', wallet, amount);
    },
    tokenBalance: (wallet) => adapter.getTokenBalance(wallet, usdc),
    reconciler: () =>
      new PaymentReconciler({
        store: gw.store,
        networks: gw.networks,
        ledger: gw.services.ledger,
        instanceId: 'token-reconciler',
        recheckMs: 0,
      }),
    close: async () => {
      await gw.close();
      await adapter.close();
      await proxy.close();
      await chain.close();
    },
  };
}

async function evmFixture(): Promise<TokenFixture> {
  const evm = await startTestEvm();
  const proxy = await startFaultProxy(evm.anvil.rpcUrl);
  const adapter = new EvmAdapter({
    info: evm.adapter.info,
    rpcUrl: proxy.url,
    endpoints: briefOutages(evm.adapter.info.id, proxy.url),
    chainId: Number(evm.adapter.info.id.split(':')[1]),
    faucet: evm.adapter.faucet,
    pollIntervalMs: 20,
  });
  const extra = await deployExtraToken(evm.anvil.rpcUrl);
  const gw = await startTestGateway({
    networks: new NetworkRegistry(
      [adapter],
      new Map([[adapter.info.id, [{ symbol: 'EURC', address: extra.address, decimals: 6 }]]]),
    ),
  });
  const usdc = evm.usdc.address;
  const family = evmFamily(evm.anvil.rpcUrl);
  return {
    f: {
      ...callerOf(gw),
      gw,
      family,
      network: adapter.info.id,
      native: adapter.info.nativeCurrency,
      party: (amount = 0n, plan = 'standard') =>
        newParty(gw, 'evm', {
          plan,
          ...(amount > 0n ? { fund: (wallet) => family.fund(wallet, amount) } : {}),
        }),
    },
    adapter,
    proxy,
    usdc,
    extra,
    fundToken: async (wallet, amount) => {
      await adapter.faucet?.fundToken('USDC', wallet, amount);
    },
    tokenBalance: (wallet) => adapter.getTokenBalance(wallet, usdc),
    reconciler: () =>
      new PaymentReconciler({
        store: gw.store,
        networks: gw.networks,
        ledger: gw.services.ledger,
        wallets: gw.services.wallets,
        instanceId: 'token-reconciler',
        recheckMs: 0,
      }),
    close: async () => {
      await gw.close();
      await adapter.close();
      await proxy.close();
      await evm.close();
      evm.dispose();
    },
  };
}

tokenSends({
  name: 'Solana (embedded localnet: SPL Token USDC, Token-2022)',
  native: 'SOL',
  foreignSymbol: 'ETH',
  foreignAddress: '0x1111111111111111111111111111111111111111',
  broadcastFault: { kind: 'drop', match: '"sendTransaction"' },
  start: solanaFixture,
  familyTests: solanaTokenTests,
});

tokenSends({
  name: 'EVM (anvil: the USDC-like ERC-20)',
  native: 'ETH',
  foreignSymbol: 'SOL',
  foreignAddress: 'So11111111111111111111111111111111111111112',
  broadcastFault: { kind: 'http-error', status: 503, match: 'eth_sendRawTransaction' },
  start: evmFixture,
  familyTests: evmTokenTests,
});
