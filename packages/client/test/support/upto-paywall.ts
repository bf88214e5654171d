import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { SchemeNetworkClient } from '@x402/core/types';
import { createPermit2ApprovalTx } from '@x402/evm';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { UptoSvmScheme } from '@x402/svm/upto/client';
import express from 'express';
import { type Address, createPublicClient, createWalletClient, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expressPaywall } from '../../src/express.ts';
import { Gate402Client } from '../../src/gate402-client.ts';
import { paymentResponseOf } from '../../src/index.ts';
import type { ProtectOptions } from '../../src/paywall.ts';
import { type UptoPayment, type UptoSettlement, UptoSettleRefused } from '../../src/upto-offer.ts';
import { type InProcessGateway, startGateway } from './gateway.ts';

/** Stock Solana clients know only mainnet, devnet and testnet: the localnet is reached as devnet. */
export const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const ANVIL = 'eip155:31337';
const ERC20 = parseAbi(['function balanceOf(address) view returns (uint256)']);

/** A stock upto buyer holding 1 USDC (and whatever its chain needs to sign). */
export interface UptoBuyer {
  readonly address: string;
  /** The stock x402 client with its chain's stock upto scheme, paying only the chain's USDC. */
  readonly client: x402Client;
}

/**
 * One chain the paywall's `upto` is tested on, as a seller and its buyers see it: where USDC is, the
 * seller's wallet, stock buyers, balances read from the chain, and what the chain does with a maximum
 * nobody settled.
 */
export interface UptoChain {
  readonly name: string;
  /** The CAIP-2 id offered and paid on. */
  readonly network: string;
  readonly usdc: string;
  readonly payTo: string;
  /** What the offer's `extra` says, from the facilitator's supported kind. */
  readonly offerExtra: Record<string, unknown>;
  newBuyer(): Promise<UptoBuyer>;
  /** USDC atomic units `address` holds. */
  usdcOf(address: string): Promise<bigint>;
  /**
   * Where the maximum moves into escrow before the handler: runs the gateway's escrow sweep as it runs
   * once a channel can no longer be claimed (its clock moved past that), returning how many escrows it
   * gave back. Absent where nothing moves before the settle.
   */
  readonly sweep?: () => Promise<number>;
}

/** The kind the gateway's facilitator lists for `upto` on `network`. */
async function uptoKind(seller: Gate402Client, network: string): Promise<Record<string, unknown>> {
  const kind = (await seller.facilitatorSupported()).kinds.find(
    (k) => k.scheme === 'upto' && k.network === network && k.x402Version === 2,
  );
  assert.ok(kind !== undefined, `the facilitator lists upto on ${network}`);
  return (kind.extra ?? {}) as Record<string, unknown>;
}

function stockClient(network: string, client: SchemeNetworkClient, usdc: string): x402Client {
  const id = network as `${string}:${string}`;
  return x402Client.fromConfig({
    schemes: [{ network: id, client }],
    spendControls: { allowedAssets: [{ network: id, asset: usdc }] },
  });
}

/** The embedded anvil: a Permit2 upto, nothing moves before the handler settles. */
export async function anvilUpto(seller: Gate402Client): Promise<UptoChain> {
  const anvil = (await seller.networks()).networks.find((n) => n.id === ANVIL);
  const usdc = anvil?.tokens.find((t) => t.symbol === 'USDC')?.address as Address | undefined;
  assert.ok(usdc !== undefined && anvil?.rpcUrl);
  const rpcUrl = anvil.rpcUrl;
  const chain = createPublicClient({ transport: http(rpcUrl) });
  const kind = await uptoKind(seller, ANVIL);
  return {
    name: 'EVM',
    network: ANVIL,
    usdc,
    payTo: (await seller.createWallet({ chain: 'evm' })).address,
    offerExtra: { assetTransferMethod: 'permit2', facilitatorAddress: kind.facilitatorAddress },
    newBuyer: async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      await seller.faucet({ address: account.address, amount: 1 });
      await seller.faucet({ address: account.address, amount: 1, token: 'USDC' });
      // The stock upto client signs Permit2 permits: the buyer approves Permit2 for the token once.
      const wallet = createWalletClient({ account, transport: http(rpcUrl) });
      const approval = await wallet.sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null });
      await chain.waitForTransactionReceipt({ hash: approval });
      return { address: account.address, client: stockClient(ANVIL, new UptoEvmScheme(account), usdc) };
    },
    usdcOf: (address) =>
      chain.readContract({
        address: usdc,
        abi: ERC20,
        functionName: 'balanceOf',
        args: [address as Address],
      }),
  };
}

/**
 * The embedded localnet, under devnet's id: a payment channel holds the maximum in escrow from before
 * the handler runs until the claim (or the sweep) pays it out.
 */
export async function localnetUpto(seller: Gate402Client, gateway: InProcessGateway): Promise<UptoChain> {
  const localnet = (await seller.networks()).networks.find((n) => n.family === 'solana' && n.isDefault);
  const usdc = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address;
  assert.ok(usdc !== undefined && localnet?.rpcUrl);
  const rpcUrl = localnet.rpcUrl;
  const kind = await uptoKind(seller, SOLANA_DEVNET);
  const payTo = (await seller.createWallet({ chain: 'solana' })).address;
  // SOL for the deposit of the token account the paywall opens for payTo when it first prices USDC.
  await seller.faucet({ address: payTo, amount: 0.01 });
  return {
    name: 'Solana',
    network: SOLANA_DEVNET,
    usdc,
    payTo,
    offerExtra: {
      feePayer: kind.feePayer,
      receiverAuthorizer: kind.receiverAuthorizer,
      withdrawDelay: 900,
      paymentFlow: 'escrow',
    },
    newBuyer: async () => {
      // No SOL: the facilitator pays the open's fee and rent.
      const signer = await generateKeyPairSigner();
      await seller.faucet({ address: signer.address, amount: 1, token: 'USDC' });
      return {
        address: signer.address,
        client: stockClient(SOLANA_DEVNET, new UptoSvmScheme(signer, { rpcUrl }), usdc),
      };
    },
    usdcOf: async (address) => {
      const portfolio = await seller.portfolio(address);
      return BigInt(portfolio.tokens.find((t) => t.mint === usdc)?.amount ?? '0');
    },
    sweep: async () => {
      const { server } = gateway;
      // What the gateway's upto-escrow-sweep job does in a pass, two hours from now: every channel
      // opened until now can no longer be claimed then.
      const at = Date.now() + 2 * 3_600_000;
      let refunded = 0;
      for (const chain of server.networks.all()) {
        const escrow = server.services.facilitator.uptoSchemeFor(chain.info.id)?.escrow;
        if (escrow === undefined) continue;
        const swept = await escrow.sweep((key) => server.store.settlements.get(key), at);
        refunded += swept.filter((s) => s.action === 'refunded').length;
      }
      return refunded;
    },
  };
}

/** What the seller's handler answers: the payment the paywall attached and what it settled. */
export interface UptoAnswer {
  readonly scheme: string;
  readonly max: string;
  readonly charged: string;
  readonly deposit: string | null;
  readonly paymentId: string | null;
}

export interface UptoSeller {
  /** The protected resource; its query says what the request used (`used=0.0175`), `wait=<ms>`, or `throw=1`. */
  readonly url: string;
  /** For each paid request that settled: whether a second settle answered the first one's settlement. */
  readonly settledTwice: boolean[];
  close(): Promise<void>;
}

/**
 * An Express seller with GET /llm behind protect({ upto }): the handler settles what `used` says, then
 * settles again to show that answers the first settlement; `wait=<ms>` delays the settle; `throw=1` makes it throw before settling, and
 * a refused settle is answered 402 with the refusal. `patient`: a settle answered `settlement_pending` is
 * asked again (every 200 ms, 10 s at most) until it ends, as a seller whose facilitator is slow would.
 */
export async function startUptoSeller(
  seller: Gate402Client,
  options: ProtectOptions,
  { patient = false } = {},
): Promise<UptoSeller> {
  const { protect } = expressPaywall(seller);
  const app = express();
  const settledTwice: boolean[] = [];
  app.get('/llm', protect(options), async (req, res) => {
    const payment = res.locals.payment as UptoPayment;
    if (req.query.throw !== undefined) throw new Error('the model crashed');
    // A slow handler: the settle comes `wait` ms after the paywall let the request through.
    if (req.query.wait !== undefined) await sleep(Number(req.query.wait));
    try {
      const settle = async (): Promise<UptoSettlement> => {
        for (let i = 0; ; i++) {
          try {
            return await payment.settle(String(req.query.used));
          } catch (error) {
            const pending =
              error instanceof UptoSettleRefused && error.settlement.errorReason === 'settlement_pending';
            if (!patient || !pending || i === 50) throw error;
            await sleep(200);
          }
        }
      };
      const settled = await settle();
      settledTwice.push(
        (await payment.settle(payment.max)).settlement.transaction === settled.settlement.transaction,
      );
      const answer: UptoAnswer = {
        scheme: payment.scheme,
        max: payment.max,
        charged: settled.amount,
        deposit: payment.depositTransaction ?? null,
        paymentId: settled.paymentId ?? null,
      };
      res.set(settled.headers).json(answer);
    } catch (error) {
      res.status(402).json({ error: (error as Error).message });
    }
  });
  // Express's own handler would print the thrown error's stack into the test's output.
  app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ error: error.message });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/llm`,
    settledTwice,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A stock @x402/fetch for the buyer that keeps the PAYMENT-SIGNATURE headers it sends (to replay one). */
function payingFetch(buyer: UptoBuyer): { pay: typeof fetch; sent: string[] } {
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const header = request.headers.get('payment-signature');
    if (header !== null) sent.push(header);
    return fetch(request);
  };
  return { pay: wrapFetchWithPayment(recording, buyer.client), sent };
}

const MAX = 50_000n;

/**
 * protect({ upto }) on one chain, against the real gateway (SQLite, the embedded chains) and a stock
 * @x402/fetch buyer with the chain's stock upto client: the offer is what the stock client reads, the
 * buyer pays what the handler settles (never the maximum), once; a replayed payment is refused; a settle
 * of 0, above the maximum, or none (the handler threw) takes nothing from the buyer — where the maximum
 * is held in escrow before the handler, it comes back (at once for 0, else through the escrow sweep).
 * Each chain's test file runs this suite: the same assertions for every chain the paywall offers upto on.
 */
export function describeUptoPaywall(
  title: string,
  chainOf: (seller: Gate402Client, gateway: InProcessGateway) => Promise<UptoChain>,
): void {
  describe(`gate402 paywall: upto on ${title} (the handler states the final amount)`, () => {
    let gateway: InProcessGateway;
    let seller: Gate402Client;
    let chain: UptoChain;
    let shop: UptoSeller;

    before(async () => {
      gateway = await startGateway();
      seller = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
      chain = await chainOf(seller, gateway);
      shop = await startUptoSeller(seller, {
        price: '0.01',
        payTo: chain.payTo,
        upto: { asset: chain.usdc, max: '0.05', network: chain.network },
      });
    });
    after(async () => {
      await shop?.close();
      await gateway?.close();
    });

    /** The received payments the seller's account records from `payer`, as [amount, sender]. */
    const receivedFrom = async (payer: string) =>
      (await seller.paymentHistory(chain.payTo, { type: 'received', limit: 100 })).payments
        .filter((p) => p.sender === payer)
        .map((p) => [p.amount, p.sender]);

    it('offers upto as the stock client reads it; the buyer pays what the handler settles, not the maximum, once', async () => {
      const offer = decodePaymentRequiredHeader(
        (await fetch(shop.url)).headers.get('payment-required') ?? '',
      );
      assert.deepEqual(
        offer.accepts.find((a) => a.scheme === 'upto'),
        {
          scheme: 'upto',
          network: chain.network,
          asset: chain.usdc,
          amount: MAX.toString(),
          payTo: chain.payTo,
          maxTimeoutSeconds: 60,
          extra: chain.offerExtra,
        },
      );

      const buyer = await chain.newBuyer();
      const { pay, sent } = payingFetch(buyer);
      const [buyerBefore, sellerBefore] = [
        await chain.usdcOf(buyer.address),
        await chain.usdcOf(chain.payTo),
      ];
      const paid = await pay(`${shop.url}?used=0.0175`);
      assert.equal(paid.status, 200, await paid.clone().text());
      const answer = (await paid.json()) as UptoAnswer;
      assert.deepEqual(
        [answer.scheme, answer.max, answer.charged],
        ['upto', '0.05', '0.0175'],
        JSON.stringify(answer),
      );
      // Where the maximum is escrowed first, the handler is told the deposit's transaction.
      assert.equal(typeof answer.deposit, chain.sweep === undefined ? 'object' : 'string');
      assert.match(answer.paymentId ?? '', /^pay_/);
      const response = paymentResponseOf(paid);
      assert.deepEqual(
        [response?.success, response?.payer, (response as { amount?: string } | undefined)?.amount],
        [true, buyer.address, '17500'],
      );
      assert.equal(
        await chain.usdcOf(buyer.address),
        buyerBefore - 17_500n,
        'the buyer pays the settled amount',
      );
      assert.equal(await chain.usdcOf(chain.payTo), sellerBefore + 17_500n, 'the seller receives it');
      assert.deepEqual(shop.settledTwice.splice(0), [true], 'a second settle answers the first settlement');
      assert.deepEqual(await receivedFrom(buyer.address), [[0.0175, buyer.address]]);

      // The same payment header again: refused before the handler, nothing moves.
      assert.equal(sent.length, 1);
      const replay = await fetch(`${shop.url}?used=0.0175`, {
        headers: { 'PAYMENT-SIGNATURE': sent[0] ?? '' },
      });
      assert.equal(replay.status, 402);
      assert.match(
        decodePaymentRequiredHeader(replay.headers.get('payment-required') ?? '').error ?? '',
        /duplicate_settlement/,
      );
      assert.deepEqual(shop.settledTwice, []);
      assert.equal(await chain.usdcOf(buyer.address), buyerBefore - 17_500n);
      assert.equal(await chain.usdcOf(chain.payTo), sellerBefore + 17_500n);
      assert.equal((await receivedFrom(buyer.address)).length, 1);
    });

    it('a settle of 0 charges nothing: the buyer has its whole maximum, and no payment is recorded', async () => {
      const buyer = await chain.newBuyer();
      const before = await chain.usdcOf(buyer.address);
      const paid = await payingFetch(buyer).pay(`${shop.url}?used=0`);
      assert.equal(paid.status, 200, await paid.clone().text());
      const answer = (await paid.json()) as UptoAnswer;
      assert.deepEqual([answer.charged, answer.paymentId], ['0', null]);
      shop.settledTwice.splice(0);
      // On Solana the claim of 0 went on chain: the escrow came back in it, not later.
      assert.equal(await chain.usdcOf(buyer.address), before);
      assert.deepEqual(await receivedFrom(buyer.address), []);
    });

    it('a settle above the maximum is refused and a handler that throws settles nothing: the buyer gets the maximum back', async () => {
      const buyer = await chain.newBuyer();
      const { pay } = payingFetch(buyer);
      const [buyerBefore, sellerBefore] = [
        await chain.usdcOf(buyer.address),
        await chain.usdcOf(chain.payTo),
      ];
      const over = await pay(`${shop.url}?used=0.06`);
      assert.equal(over.status, 402);
      assert.match(((await over.json()) as { error: string }).error, /more than the 0.05/);
      const threw = await pay(`${shop.url}?throw=1`);
      assert.equal(threw.status, 500);
      assert.deepEqual(shop.settledTwice, []);
      assert.equal(await chain.usdcOf(chain.payTo), sellerBefore, 'the seller is paid nothing');
      assert.deepEqual(await receivedFrom(buyer.address), []);
      if (chain.sweep === undefined) {
        // Nothing moved before the settle: the buyer's permits expire unused.
        assert.equal(await chain.usdcOf(buyer.address), buyerBefore);
        return;
      }
      // Both maxima went into escrow before the handler ran; nobody claimed them.
      assert.equal(await chain.usdcOf(buyer.address), buyerBefore - 2n * MAX);
      assert.ok((await chain.sweep()) >= 2, 'the sweep gives both escrows back');
      assert.equal(await chain.usdcOf(buyer.address), buyerBefore);
      assert.equal(await chain.usdcOf(chain.payTo), sellerBefore);
    });
  });
}
