import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { USDC_LIKE_ABI, USDC_LIKE_BYTECODE } from '@gate402/anvil';
import { address, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import Database from 'better-sqlite3';
import { type Address, createPublicClient, createWalletClient, http } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { Gate402Client } from '../../../../client/src/gate402-client.ts';
import { Gate402Paywall } from '../../../../client/src/paywall.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { createToken2022WithMetadata, mintToken2022 } from '../../support/token-2022-mint.ts';
import {
  evmExactRequirements,
  evmPayload,
  newV1SvmBuyer,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';

/**
 * A hostile buyer (and a hostile second account) against every route that records or confirms a
 * payment, on both embedded chains, with stock @x402 buyers: rows are routes × attacks, run on each
 * family. Every refusal must carry the documented code and reason and leave no trace in storage (no
 * payment, consumed proof, settlement, receipt or event row). A new route is one more ROUTES entry, a
 * new attack one more ATTACKS entry, a new chain family one more world.
 *
 * The junk token is the buyer's own: a Token-2022 mint (Solana) or a USDC-like contract (EVM) whose
 * authority is the buyer, named "USD Coin" / "USDC" so that nothing but its address tells it apart.
 */

type Family = 'solana' | 'evm';
interface Caller {
  readonly key: string;
  readonly accountId: string;
  readonly wallet: string;
}

interface World {
  readonly family: Family;
  readonly network: string;
  readonly nativeDecimals: number;
  readonly usdc: string;
  readonly junk: string;
  readonly seller: Caller;
  /** Another account of the gateway, with its own wallet. */
  readonly other: Caller;
  gw(): TestGateway;
  /**
   * A stock buyer's `exact` payload (the PAYMENT-SIGNATURE value) of `atomic` units of `asset` to
   * `payTo` (default the seller). `sellerPays`: Solana fee payer = the seller's wallet (local mode).
   */
  pay(options: {
    asset: 'usdc' | 'junk';
    atomic: bigint;
    payTo?: string;
    sellerPays?: boolean;
    /** EVM: a Permit2 payload (extra.assetTransferMethod) instead of EIP-3009. */
    permit2?: boolean;
  }): Promise<string>;
  /**
   * The same as an x402 v1 buyer's X-PAYMENT value (which names no asset: only its transfer does);
   * undefined on a family whose v1 buyer is not driven here.
   */
  payV1?(options: { asset: 'usdc' | 'junk'; atomic: bigint; sellerPays?: boolean }): Promise<string>;
  /** A gate402 proof (`0x…`) of 0.01 in the native currency, sent to the seller by the other account. */
  payNative(): Promise<string>;
}

/** What a route is asked: the wallet paid, the proof, and the price stated. */
interface Attempt {
  readonly wallet: string;
  readonly proof: string;
  /** The price in whole units of `asset` (the native currency when absent)... */
  readonly whole: number;
  /** ...and the same in atomic units. */
  readonly atomic: bigint;
  readonly asset?: string;
}

type Outcome =
  | { readonly ok: true; readonly asset: unknown }
  | { readonly ok: false; readonly code: string; readonly reason: string };

interface Route {
  readonly name: string;
  submit(w: World, caller: Caller, attempt: Attempt): Promise<Outcome>;
}

/** A receive route's answer as an outcome: 200 is verified; a refusal is its code and details.paymentProof. */
function received(res: { status: number; body: unknown }): Outcome {
  const body = res.body as {
    asset?: unknown;
    error?: { code?: string; details?: { paymentProof?: string } };
  };
  if (res.status === 200) return { ok: true, asset: body.asset };
  return { ok: false, code: String(body.error?.code), reason: String(body.error?.details?.paymentProof) };
}

const receiveBody = (a: Attempt) => ({
  walletAddress: a.wallet,
  paymentProof: a.proof,
  expectedAmount: a.whole,
  ...(a.asset === undefined ? {} : { asset: a.asset }),
});

/** The seller paywall of @gate402/client, for each gateway: its client is the seller's. */
let gatewayUrl = '';

const ROUTES: readonly Route[] = [
  {
    name: 'POST /payment/receive',
    submit: async (w, caller, a) =>
      received(await callAs(w.gw(), caller.key, 'POST', '/payment/receive', receiveBody(a))),
  },
  {
    name: 'POST /transaction/receive',
    submit: async (w, caller, a) =>
      received(await callAs(w.gw(), caller.key, 'POST', '/transaction/receive', receiveBody(a))),
  },
  {
    name: 'POST /v1/payments/verify',
    submit: async (w, caller, a) => {
      const res = await callAs(w.gw(), caller.key, 'POST', '/v1/payments/verify', {
        // An x402 payment header value is itself base64 JSON: given as it came; a gate402 proof in base64.
        payment_proof: a.proof.startsWith('0x') ? Buffer.from(a.proof).toString('base64') : a.proof,
        amount: Number(a.atomic),
        recipient: a.wallet,
        ...(a.asset === undefined ? {} : { asset: a.asset }),
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.verified === true
        ? { ok: true, asset: res.body.asset }
        : { ok: false, code: 'verified:false', reason: res.body.reason };
    },
  },
  {
    // A route priced in the native currency, the buyer presenting its x402 payload as the proof of a
    // gate402-native payment (X-PAYMENT v1 JSON): the paywall forwards it to /payment/receive.
    name: 'paywall (native price)',
    submit: async (w, caller, a) => {
      if (a.asset !== undefined) throw new Error('the native paywall row takes native prices only');
      const paywall = new Gate402Paywall(new Gate402Client({ url: gatewayUrl, apiKey: caller.key }));
      const resource = paywall.protect({ price: a.whole, payTo: a.wallet, network: w.network });
      const header = Buffer.from(
        JSON.stringify({
          x402Version: 1,
          scheme: 'gate402-native',
          network: w.network,
          payload: { paymentProof: a.proof },
        }),
      ).toString('base64');
      const decision = await resource.handle({
        // The resource the stock buyer's payload names (x402-buyer.ts): only the asset is wrong.
        url: 'https://shop.example/r',
        header: (name) => (name.toLowerCase() === 'x-payment' ? header : undefined),
      });
      if (decision.paid) return { ok: true, asset: 'native' };
      // The 402's error: "<code>: <message> (<details.paymentProof>)".
      const error = String((decision.body as { error?: unknown }).error ?? '');
      const code = decision.status === 402 ? (error.split(': ')[0] ?? '') : `HTTP ${decision.status}`;
      return { ok: false, code, reason: /\(([a-z_]+)\)$/.exec(error)?.[1] ?? error };
    },
  },
];

interface Attack {
  readonly name: string;
  /** Routes the attack applies to; default every route. */
  readonly on?: readonly string[];
  /** Chain families the attack applies to; default both. */
  readonly families?: readonly Family[];
  /** The attempt on `route`, after any setup of its own (e.g. the payload redeemed once before). */
  attempt(w: World, route: string): Promise<Attempt>;
  /** `ok`: the payment is verified, and the answer carries this asset. */
  readonly expect: (w: World, route: string) => { code: string; reason: string } | { ok: unknown };
}

const NATIVE_ROUTES = ROUTES.map((r) => r.name);
const TOKEN_ROUTES = NATIVE_ROUTES.filter((r) => !r.startsWith('paywall'));
const refused = (code: string, reason: string) => (_w: World, route: string) =>
  route === 'POST /v1/payments/verify' ? { code: 'verified:false', reason } : { code, reason };
const USDC_PRICE = { whole: 0.01, atomic: 10_000n, asset: 'USDC' } as const;
const nativePrice = (w: World) => ({ whole: 0.01, atomic: 10n ** BigInt(w.nativeDecimals - 2) });

const ATTACKS: readonly Attack[] = [
  {
    name: 'wrong asset: 0.01 of a junk token the buyer minted, for a price of 0.01 in the native currency',
    on: NATIVE_ROUTES,
    attempt: async (w) => ({
      wallet: w.seller.wallet,
      proof: await w.pay({ asset: 'junk', atomic: 10n ** BigInt(w.nativeDecimals - 2) }),
      ...nativePrice(w),
    }),
    expect: refused('INVALID_PAYMENT_PROOF', 'asset_mismatch'),
  },
  {
    name: 'wrong asset: 0.01 of a junk token the buyer minted, for a price of 0.01 USDC',
    on: TOKEN_ROUTES,
    attempt: async (w) => ({
      wallet: w.seller.wallet,
      proof: await w.pay({ asset: 'junk', atomic: 10_000n }),
      ...USDC_PRICE,
    }),
    expect: refused('INVALID_PAYMENT_PROOF', 'asset_mismatch'),
  },
  {
    // A gate402 proof attests a native transfer only: it pays no token price, whatever the amount.
    name: 'wrong asset: a gate402 proof of 0.01 in the native currency, for a price of 0.01 USDC',
    on: TOKEN_ROUTES,
    attempt: async (w) => ({ wallet: w.seller.wallet, proof: await w.payNative(), ...USDC_PRICE }),
    expect: refused('INVALID_PAYMENT_PROOF', 'asset_mismatch'),
  },
  {
    name: 'wrong asset: 0.01 USDC for a price of 0.01 in the native currency',
    on: NATIVE_ROUTES,
    attempt: async (w) => ({
      wallet: w.seller.wallet,
      proof: await w.pay({ asset: 'usdc', atomic: 10_000n }),
      ...nativePrice(w),
    }),
    expect: refused('INVALID_PAYMENT_PROOF', 'asset_mismatch'),
  },
  {
    // Only the transfer tells: the facilitator's mint_mismatch (Solana) must reach the seller as asset_mismatch.
    name: 'wrong asset, disguised: a payload whose accepted names USDC while its transfer moves the junk token',
    on: TOKEN_ROUTES,
    families: ['solana'],
    attempt: async (w, route) => {
      const sellerPays = route === 'POST /transaction/receive';
      const junk = decodePaymentSignatureHeader(await w.pay({ asset: 'junk', atomic: 10_000n, sellerPays }));
      return {
        wallet: w.seller.wallet,
        proof: encodePaymentSignatureHeader({ ...junk, accepted: { ...junk.accepted, asset: w.usdc } }),
        ...USDC_PRICE,
      };
    },
    expect: refused('INVALID_PAYMENT_PROOF', 'asset_mismatch'),
  },
  {
    // EVM: the junk contract's EIP-712 domain is not USDC's, so the signature cannot pay USDC at all.
    name: 'wrong asset, disguised (EVM): accepted names USDC, the authorization is signed for the junk contract',
    on: TOKEN_ROUTES,
    families: ['evm'],
    attempt: async (w) => {
      const junk = decodePaymentSignatureHeader(await w.pay({ asset: 'junk', atomic: 10_000n }));
      return {
        wallet: w.seller.wallet,
        proof: encodePaymentSignatureHeader({ ...junk, accepted: { ...junk.accepted, asset: w.usdc } }),
        ...USDC_PRICE,
      };
    },
    expect: refused('PAYMENT_VERIFICATION_FAILED', 'invalid_exact_evm_signature'),
  },
  {
    // The permit names its token: the facilitator's permit2_token_mismatch is another asset than asked.
    name: 'wrong asset, disguised (EVM Permit2): accepted names USDC, the permit is for the junk contract',
    on: TOKEN_ROUTES,
    families: ['evm'],
    attempt: async (w) => {
      const junk = decodePaymentSignatureHeader(
        await w.pay({ asset: 'junk', atomic: 10_000n, permit2: true }),
      );
      return {
        wallet: w.seller.wallet,
        proof: encodePaymentSignatureHeader({ ...junk, accepted: { ...junk.accepted, asset: w.usdc } }),
        ...USDC_PRICE,
      };
    },
    expect: refused('INVALID_PAYMENT_PROOF', 'asset_mismatch'),
  },
  {
    name: 'wrong asset, v1: an X-PAYMENT v1 payload (it names no asset) moving the junk token, for 0.01 USDC',
    on: TOKEN_ROUTES,
    families: ['solana'],
    attempt: async (w, route) => ({
      wallet: w.seller.wallet,
      proof: await (w.payV1 as NonNullable<World['payV1']>)({
        asset: 'junk',
        atomic: 10_000n,
        sellerPays: route === 'POST /transaction/receive',
      }),
      ...USDC_PRICE,
    }),
    expect: refused('INVALID_PAYMENT_PROOF', 'asset_mismatch'),
  },
  {
    name: 'wrong network: a USDC payload naming a network this gateway does not serve',
    on: TOKEN_ROUTES,
    attempt: async (w) => {
      const payload = decodePaymentSignatureHeader(await w.pay({ asset: 'usdc', atomic: 10_000n }));
      const elsewhere = w.family === 'solana' ? 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' : 'eip155:8453';
      return {
        wallet: w.seller.wallet,
        proof: encodePaymentSignatureHeader({
          ...payload,
          accepted: { ...payload.accepted, network: elsewhere as PaymentRequirements['network'] },
        }),
        ...USDC_PRICE,
      };
    },
    expect: refused('INVALID_PAYMENT_PROOF', 'invalid_network'),
  },
  {
    name: "wrong payee: a USDC payload paying another account's wallet, presented by the seller",
    on: TOKEN_ROUTES,
    attempt: async (w) => ({
      wallet: w.seller.wallet,
      proof: await w.pay({ asset: 'usdc', atomic: 10_000n, payTo: w.other.wallet }),
      ...USDC_PRICE,
    }),
    expect: refused('INVALID_PAYMENT_PROOF', 'recipient_mismatch'),
  },
  {
    name: 'one atomic unit short: 0.009999 USDC for 0.01 USDC',
    on: TOKEN_ROUTES,
    attempt: async (w) => ({
      wallet: w.seller.wallet,
      proof: await w.pay({ asset: 'usdc', atomic: 9_999n }),
      ...USDC_PRICE,
    }),
    expect: refused('PAYMENT_VERIFICATION_FAILED', 'amount_too_low'),
  },
  {
    name: 'replay: a USDC payload the seller already redeemed with /payment/receive',
    on: TOKEN_ROUTES,
    attempt: async (w) => {
      const attempt = {
        wallet: w.seller.wallet,
        proof: await w.pay({ asset: 'usdc', atomic: 10_000n }),
        ...USDC_PRICE,
      };
      const first = await callAs(w.gw(), w.seller.key, 'POST', '/payment/receive', receiveBody(attempt));
      assert.equal(first.status, 200, JSON.stringify(first.body));
      return attempt;
    },
    expect: (_w, route) =>
      route === 'POST /v1/payments/verify'
        ? { code: 'verified:false', reason: 'duplicate_settlement' }
        : { code: 'INVALID_PAYMENT_PROOF', reason: 'already_used' },
  },
  {
    name: "the same payload on two accounts: another account presents the seller's USDC payload for its own wallet",
    on: TOKEN_ROUTES,
    attempt: async (w) => ({
      wallet: w.other.wallet,
      proof: await w.pay({ asset: 'usdc', atomic: 10_000n }),
      ...USDC_PRICE,
    }),
    expect: refused('INVALID_PAYMENT_PROOF', 'recipient_mismatch'),
  },
];

/** The happy path next to the attacks: the right asset and amount, and the answer names the asset. */
const HAPPY: Attack = {
  name: 'the right asset and amount: 0.01 USDC for 0.01 USDC is verified, and the answer carries the asset',
  on: TOKEN_ROUTES,
  attempt: async (w, route) => ({
    wallet: w.seller.wallet,
    // /transaction/receive: the seller's wallet submits the payload, so it is its fee payer (Solana).
    proof: await w.pay({ asset: 'usdc', atomic: 10_000n, sellerPays: route === 'POST /transaction/receive' }),
    ...USDC_PRICE,
  }),
  expect: (w) => ({ ok: { symbol: 'USDC', address: w.usdc, decimals: 6 } }),
};

/** The v1 payload of the right asset is verified too: the v1 rows' refusals are for the asset alone. */
const HAPPY_V1: Attack = {
  name: 'v1, the right asset and amount: an X-PAYMENT v1 payload of 0.01 USDC for 0.01 USDC is verified',
  on: TOKEN_ROUTES,
  families: ['solana'],
  attempt: async (w, route) => ({
    wallet: w.seller.wallet,
    proof: await (w.payV1 as NonNullable<World['payV1']>)({
      asset: 'usdc',
      atomic: 10_000n,
      sellerPays: route === 'POST /transaction/receive',
    }),
    ...USDC_PRICE,
  }),
  expect: (w) => ({ ok: { symbol: 'USDC', address: w.usdc, decimals: 6 } }),
};

/** Rows of storage that any payment, consumed proof, settlement, receipt or event leaves. */
const TRACE_TABLES = ['payments', 'consumed_proofs', 'x402_settlements', 'x402_receipts', 'events'] as const;

describe('receive attacks: a hostile buyer against every route that records or confirms a payment', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let db: Database.Database;
  const worlds: World[] = [];

  const traces = () =>
    Object.fromEntries(
      TRACE_TABLES.map((t) => [t, (db.prepare(`select count(*) as n from ${t}`).get() as { n: number }).n]),
    );

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    const storage = tempSqlite();
    gw = await startTestGateway({ storage, networks: new NetworkRegistry([chain.adapter, evm.adapter]) });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    if (storage.location.kind !== 'sqlite') throw new Error('the suite counts rows of its SQLite file');
    db = new Database(storage.location.file, { readonly: true, fileMustExist: true });

    const caller = async (family: Family): Promise<Caller> => {
      const { key, accountId } = await gw.newCaller('premium');
      const wallet = await callAs(gw, key, 'POST', '/wallets', { chain: family });
      assert.equal(wallet.status, 200, JSON.stringify(wallet.body));
      return { key, accountId, wallet: wallet.body.address };
    };
    const faucet = async (key: string, body: object) => {
      const res = await callAs(gw, key, 'POST', '/faucet', body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    const nativeProof = async (from: Caller, to: Caller) => {
      const res = await callAs(gw, from.key, 'POST', '/payment/send', {
        walletAddress: from.wallet,
        recipientAddress: to.wallet,
        amount: 0.01,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return String(res.body.paymentProof);
    };

    // Solana: the buyer mints its own "USDC" (Token-2022, buyer as authority).
    {
      const [seller, other] = [await caller('solana'), await caller('solana')];
      const buyer: KeyPairSigner = await generateKeyPairSigner();
      await faucet(seller.key, { address: buyer.address, amount: 1 });
      await faucet(seller.key, { address: buyer.address, amount: 1, token: 'USDC' });
      // x402 `exact` does not create the seller's token accounts: a first USDC mint does. SOL: the seller's
      // wallet pays the fee of what it submits itself (/transaction/receive).
      for (const c of [seller, other]) {
        await faucet(seller.key, { address: c.wallet, amount: 0.01, token: 'USDC' });
        await faucet(seller.key, { address: c.wallet, amount: 1 });
      }
      chain.localnet.advanceSlots(1);
      const { mint } = await createToken2022WithMetadata(
        chain.localnet.rpcUrl,
        buyer,
        { name: 'USD Coin', symbol: 'USDC', uri: 'https://junk.example/usdc.json', decimals: 6 },
        () => chain.localnet.advanceSlots(1),
      );
      await mintToken2022(chain.localnet.rpcUrl, buyer, mint, buyer.address, 1_000_000_000n);
      chain.localnet.advanceSlots(1);
      for (const c of [seller, other])
        await mintToken2022(chain.localnet.rpcUrl, buyer, mint, address(c.wallet), 1n);
      chain.localnet.advanceSlots(1);
      const feePayer = gw.services.facilitator.feePayerOf(chain.adapter.info.id) ?? '';
      // A v1 buyer (x402 1.x client) holding both tokens too.
      const v1Buyer = await newV1SvmBuyer(chain);
      await faucet(seller.key, { address: v1Buyer.address, amount: 1, token: 'USDC' });
      await mintToken2022(chain.localnet.rpcUrl, buyer, mint, address(v1Buyer.address), 1_000_000_000n);
      chain.localnet.advanceSlots(1);
      worlds.push({
        family: 'solana',
        network: chain.adapter.info.id,
        nativeDecimals: 9,
        usdc: chain.localnet.usdcMint.address,
        junk: mint,
        seller,
        other,
        gw: () => gw,
        payNative: () => nativeProof(other, seller),
        pay: async (o) => {
          const requirements = svmExactRequirements(chain, {
            amount: o.atomic.toString(),
            payTo: o.payTo ?? seller.wallet,
            feePayer: o.sellerPays === true ? seller.wallet : feePayer,
          });
          const asset = o.asset === 'junk' ? mint : requirements.asset;
          return encodePaymentSignatureHeader(await svmPayload(chain, buyer, { ...requirements, asset }));
        },
        payV1: (o) =>
          v1Buyer.paymentHeader({
            amount: o.atomic.toString(),
            payTo: seller.wallet,
            feePayer: o.sellerPays === true ? seller.wallet : feePayer,
            resource: 'https://shop.example/r',
            ...(o.asset === 'junk' ? { asset: mint } : {}),
          }),
      });
    }

    // EVM: the buyer deploys its own USDC-like token (same name, same EIP-712 domain) and mints itself some.
    {
      const [seller, other] = [await caller('evm'), await caller('evm')];
      const buyer: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey());
      await faucet(seller.key, { address: buyer.address, amount: 1 });
      await faucet(seller.key, { address: buyer.address, amount: 1, token: 'USDC' });
      await faucet(seller.key, { address: seller.wallet, amount: 1 });
      await faucet(seller.key, { address: other.wallet, amount: 1 });
      const transport = http(evm.anvil.rpcUrl);
      const wallet = createWalletClient({ account: buyer, transport });
      const reader = createPublicClient({ transport });
      const deployed = await reader.waitForTransactionReceipt({
        hash: await wallet.deployContract({
          chain: null,
          abi: USDC_LIKE_ABI,
          bytecode: USDC_LIKE_BYTECODE as `0x${string}`,
          args: [buyer.address],
        }),
        pollingInterval: 20,
      });
      const junk = deployed.contractAddress as Address;
      await reader.waitForTransactionReceipt({
        hash: await wallet.writeContract({
          chain: null,
          address: junk,
          abi: USDC_LIKE_ABI,
          functionName: 'mint',
          args: [buyer.address, 1_000_000_000n],
        }),
        pollingInterval: 20,
      });
      worlds.push({
        family: 'evm',
        network: evm.adapter.info.id,
        nativeDecimals: 18,
        usdc: evm.usdc.address,
        junk,
        seller,
        other,
        gw: () => gw,
        payNative: () => nativeProof(other, seller),
        pay: async (o) => {
          const requirements = evmExactRequirements(evm, {
            amount: o.atomic.toString(),
            payTo: o.payTo ?? seller.wallet,
          });
          const asset = o.asset === 'junk' ? junk : requirements.asset;
          const extra = o.permit2 === true ? { assetTransferMethod: 'permit2' } : requirements.extra;
          return encodePaymentSignatureHeader(await evmPayload(buyer, { ...requirements, asset, extra }));
        },
      });
    }
  });

  after(async () => {
    db?.close();
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  for (const family of ['solana', 'evm'] as const) {
    for (const attack of [...ATTACKS, HAPPY_V1, HAPPY].filter((a) => a.families?.includes(family) ?? true)) {
      for (const route of ROUTES.filter((r) => (attack.on ?? NATIVE_ROUTES).includes(r.name))) {
        it(`${family} · ${route.name} · ${attack.name}`, async () => {
          const w = worlds.find((x) => x.family === family) as World;
          const attempt = await attack.attempt(w, route.name);
          const caller = attempt.wallet === w.other.wallet ? w.other : w.seller;
          const before = traces();
          const outcome = await route.submit(w, caller, attempt);
          const expected = attack.expect(w, route.name);
          if ('ok' in expected) {
            assert.equal(outcome.ok, true, JSON.stringify(outcome));
            assert.deepEqual((outcome as { asset: unknown }).asset, expected.ok);
            return;
          }
          assert.deepEqual(
            outcome.ok ? outcome : { code: outcome.code, reason: outcome.reason },
            expected,
            JSON.stringify(outcome),
          );
          assert.deepEqual(traces(), before, 'a refused payment leaves no trace in storage');
        });
      }
    }
  }
});
