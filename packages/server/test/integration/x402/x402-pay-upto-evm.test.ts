import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodePaymentResponseHeader, decodePaymentSignatureHeader } from '@x402/core/http';
import { ExactEvmScheme as ExactSellerScheme } from '@x402/evm/exact/server';
import { UptoEvmScheme as UptoSellerScheme } from '@x402/evm/upto/server';
import { paymentMiddleware, setSettlementOverrides, x402ResourceServer } from '@x402/express';
import express from 'express';
import { type Address, createPublicClient, getAddress, http, maxUint256, parseAbi } from 'viem';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { UPTO_PERMIT2_PROXY_ADDRESS } from '../../../src/chains/evm/upto-permit2-proxy.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { toWholeUnits } from '../../../src/domain/money.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { gatewayFacilitator } from '../../support/x402-shop.ts';

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address, address) view returns (uint256)',
]);
/** The seller's maximum: 0.05 USDC. */
const MAX = 50_000n;

/**
 * POST /payment/x402 paying a stock `@x402/express` upto seller (`@x402/evm/upto/server`, gate402 as
 * its facilitator) from a custodial EVM wallet on the embedded anvil. The wallet has never approved
 * Permit2: the gateway sends its one `approve(Permit2, max)` (the wallet's ETH paying the gas) before it
 * signs the first permit, exactly once per wallet and token, whatever the concurrency, on two gateway
 * instances sharing one database (PostgreSQL when DATABASE_URL is set, else one SQLite file).
 */
describe('POST /payment/x402 pays x402 upto on EVM from a custodial wallet (Permit2 approved once)', () => {
  let evm: TestEvm;
  let first: TestGateway;
  let second: TestGateway;
  let seller: { key: string; evm: Address };
  let shopUrl: string;
  let closeShop: (() => Promise<void>) | undefined;
  let usdc: Address;
  let shared: Parameters<typeof startTestGateway>[0] & object;

  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const tokenBalance = (address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] });
  const permit2Allowance = (address: Address) =>
    chainClient().readContract({
      address: usdc,
      abi: TOKEN_ABI,
      functionName: 'allowance',
      args: [address, PERMIT2_ADDRESS],
    });
  /** Transactions the wallet itself sent (its mined nonce count): the approval is the only one. */
  const sentBy = (address: Address) => chainClient().getTransactionCount({ address, blockTag: 'latest' });

  /** A buyer account with a custodial EVM wallet holding `eth` ETH and 1 USDC. */
  const newBuyer = async (eth = 1) => {
    const caller = await first.newCaller('premium');
    const wallet = (await callAs(first, caller.key, 'POST', '/wallets', { chain: 'evm' })).body
      .address as Address;
    const fundings = [
      { address: wallet, amount: 1, token: 'USDC' },
      ...(eth > 0 ? [{ address: wallet, amount: eth }] : []),
    ];
    for (const body of fundings) {
      const funded = await callAs(first, seller.key, 'POST', '/faucet', body);
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    return { ...caller, wallet };
  };
  const challenge = async () => {
    const res = await fetch(shopUrl);
    assert.equal(res.status, 402);
    return res.headers.get('payment-required') ?? '';
  };
  const pay = (gw: TestGateway, key: string, wallet: Address, paymentRequired: string, maxUsdc = 1) =>
    callAs(gw, key, 'POST', '/payment/x402', {
      walletAddress: wallet,
      paymentRequired,
      resource: shopUrl,
      maxAmount: { USDC: maxUsdc },
    });
  /** Sends the signed header to the seller, who settles `used`; then the buyer asks the gateway to look. */
  const redeem = async (key: string, paid: { paymentId: string; paymentHeader: string }, used: bigint) => {
    const res = await fetch(`${shopUrl}?used=${used}`, {
      headers: { 'PAYMENT-SIGNATURE': paid.paymentHeader },
    });
    assert.equal(res.status, 200, await res.clone().text());
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.deepEqual([settled.success, settled.amount], [true, used.toString()]);
    const check = await callAs(first, key, 'POST', `/payment/x402/${paid.paymentId}/check`);
    assert.equal(check.status, 200, JSON.stringify(check.body));
    assert.deepEqual([check.body.status, check.body.signature], ['confirmed', settled.transaction]);
    return settled;
  };

  before(async () => {
    evm = await startTestEvm();
    const network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    const storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    shared = {
      storage,
      masterKey: new Uint8Array(randomBytes(32)),
      networks: new NetworkRegistry([evm.adapter]),
    };
    first = await startTestGateway({ ...shared, disposeStorage: false });
    second = await startTestGateway(shared);
    await first.services.facilitator.start();
    await second.services.facilitator.start();
    await first.app.listen({ port: 0, host: '127.0.0.1' });
    const gatewayUrl = `http://127.0.0.1:${(first.app.server.address() as AddressInfo).port}`;
    const caller = await first.newCaller('premium');
    seller = {
      key: caller.key,
      evm: (await callAs(first, caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };

    // A stock @x402/express upto seller: up to 0.05 USDC; the handler settles what the query says it used.
    const server = new x402ResourceServer(gatewayFacilitator(gatewayUrl, caller.key));
    server.register(network, new UptoSellerScheme());
    server.register(network, new ExactSellerScheme());
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /metered': {
            accepts: {
              scheme: 'upto',
              network,
              payTo: seller.evm,
              price: { amount: MAX.toString(), asset: usdc, extra: { name: 'USD Coin', version: '2' } },
            },
            description: 'metered by use, up to 0.05 USDC',
          },
          // A fixed price, paid through Permit2 (x402's exact Permit2 proxy).
          'GET /fixed': {
            accepts: {
              scheme: 'exact',
              network,
              payTo: seller.evm,
              price: { amount: '20000', asset: usdc, extra: { assetTransferMethod: 'permit2' } },
            },
            description: '0.02 USDC',
          },
        },
        server,
      ),
    );
    app.get('/fixed', (_req, res) => {
      res.json({ fixed: true });
    });
    app.get('/metered', (req, res) => {
      setSettlementOverrides(res, { amount: String(req.query.used ?? MAX) });
      res.json({ used: String(req.query.used ?? MAX) });
    });
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    shopUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/metered`;
    closeShop = () => new Promise((resolve) => listening.close(() => resolve()));
  });

  after(async () => {
    await closeShop?.();
    await first?.close();
    await second?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('the first payment sends one approval, then signs the maximum; the seller settles less; the second pays without approval', async () => {
    const buyer = await newBuyer();
    assert.equal(await permit2Allowance(buyer.wallet), 0n);
    const [usdcBefore, sellerBefore] = await Promise.all([
      tokenBalance(buyer.wallet),
      tokenBalance(seller.evm),
    ]);

    const paid = await pay(first, buyer.key, buyer.wallet, await challenge());
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(await sentBy(buyer.wallet), 1, 'one transaction from the wallet: the approval');
    assert.equal(await permit2Allowance(buyer.wallet), maxUint256);
    // Pending at the signed maximum: what the seller may take, and what the spend policies counted.
    assert.deepEqual([paid.body.status, paid.body.amount], ['pending', 0.05]);
    const permit = decodePaymentSignatureHeader(paid.body.paymentHeader).payload.permit2Authorization as {
      from: string;
      spender: string;
      permitted: { token: string; amount: string };
      witness: { to: string };
    };
    assert.deepEqual(
      [
        permit.from,
        permit.spender,
        getAddress(permit.permitted.token),
        permit.permitted.amount,
        permit.witness.to,
      ],
      [buyer.wallet, UPTO_PERMIT2_PROXY_ADDRESS, usdc, MAX.toString(), seller.evm],
    );

    await redeem(buyer.key, paid.body, 12_345n);
    assert.equal(await tokenBalance(buyer.wallet), usdcBefore - 12_345n);
    assert.equal(await tokenBalance(seller.evm), sellerBefore + 12_345n);
    const status = await callAs(first, buyer.key, 'GET', `/payment/status/${paid.body.paymentId}`);
    assert.deepEqual([status.body.status, status.body.amount], ['confirmed', 0.012345]);

    // The history: the payment at what was settled, and the approval as a fee of 0 ETH paid to no one.
    const history = await callAs(first, buyer.key, 'GET', `/payment/history/${buyer.wallet}`);
    assert.equal(history.body.total, 2, JSON.stringify(history.body));
    const approval = history.body.payments.find((p: { amount: number }) => p.amount === 0);
    assert.deepEqual(
      [approval.type, approval.asset.address, approval.recipient, approval.status],
      ['sent', null, usdc, 'confirmed'],
    );
    // Its status says what it is (metadata.description, as the spec's metadata holds one) and what its
    // gas cost, in ETH: the fee the chain charged, not the estimate it was signed with.
    const receipt = await chainClient().getTransactionReceipt({ hash: approval.signature });
    const gasPaid = receipt.gasUsed * receipt.effectiveGasPrice;
    const approvalStatus = await callAs(first, buyer.key, 'GET', `/payment/status/${approval.paymentId}`);
    assert.deepEqual(approvalStatus.body.metadata, {
      description:
        "Permit2 approval of USDC (one-time): lets this wallet's x402 Permit2 payments move USDC, each only with a permit the gateway signs. Nothing was paid to anyone; its cost is the network fee (permit2Approval.fee).",
      permit2Approval: { token: usdc, symbol: 'USDC', fee: toWholeUnits(gasPaid, 18) },
    });
    assert.ok(approvalStatus.body.metadata.permit2Approval.fee > 0);
    const record = await first.store.payments.get(approval.paymentId);
    assert.equal(record?.fee, gasPaid, 'the gas paid, as its fee');

    // The second payment: no approval, the permit signed at once.
    const again = await pay(second, buyer.key, buyer.wallet, await challenge());
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(await sentBy(buyer.wallet), 1, 'no second approval');
    await redeem(buyer.key, again.body, 7_000n);
    assert.equal(await tokenBalance(buyer.wallet), usdcBefore - 19_345n);
  });

  it('five first payments at once, on two instances, send exactly one approval; the wallet loses only what was settled', async () => {
    const buyer = await newBuyer();
    const usdcBefore = await tokenBalance(buyer.wallet);
    const header = await challenge();
    const paid = await Promise.all(
      [first, second, first, second, first].map((gw) => pay(gw, buyer.key, buyer.wallet, header)),
    );
    for (const p of paid) assert.equal(p.status, 200, JSON.stringify(p.body));
    assert.equal(new Set(paid.map((p) => p.body.paymentHeader)).size, 5, 'five permits');
    assert.equal(await sentBy(buyer.wallet), 1, 'one approval');
    const approvals = (
      await callAs(first, buyer.key, 'GET', `/payment/history/${buyer.wallet}`)
    ).body.payments.filter((p: { amount: number }) => p.amount === 0);
    assert.equal(approvals.length, 1);

    const used = [1_000n, 2_000n, 3_000n];
    for (const [i, amount] of used.entries()) await redeem(buyer.key, paid[i]?.body, amount);
    // Two permits never settled: nothing taken for them.
    assert.equal(await tokenBalance(buyer.wallet), usdcBefore - 6_000n);
  });

  it('an exact offer through Permit2 is paid after the same one approval, which an upto offer then shares', async () => {
    const buyer = await newBuyer();
    const usdcBefore = await tokenBalance(buyer.wallet);
    const fixedUrl = shopUrl.replace('/metered', '/fixed');
    const offered = await fetch(fixedUrl);
    assert.equal(offered.status, 402);
    const paid = await callAs(first, buyer.key, 'POST', '/payment/x402', {
      walletAddress: buyer.wallet,
      paymentRequired: offered.headers.get('payment-required') ?? '',
      resource: fixedUrl,
      maxAmount: { USDC: 1 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(await sentBy(buyer.wallet), 1, 'the approval');
    const permit = decodePaymentSignatureHeader(paid.body.paymentHeader).payload.permit2Authorization as {
      spender: string;
    };
    assert.equal(permit.spender, EXACT_PERMIT2_PROXY_ADDRESS);
    const res = await fetch(fixedUrl, { headers: { 'PAYMENT-SIGNATURE': paid.body.paymentHeader } });
    assert.equal(res.status, 200, await res.clone().text());
    const check = await callAs(first, buyer.key, 'POST', `/payment/x402/${paid.body.paymentId}/check`);
    assert.deepEqual([check.body.status, paid.body.amount], ['confirmed', 0.02]);
    assert.equal(await tokenBalance(buyer.wallet), usdcBefore - 20_000n);

    const upto = await pay(second, buyer.key, buyer.wallet, await challenge());
    assert.equal(upto.status, 200, JSON.stringify(upto.body));
    assert.equal(await sentBy(buyer.wallet), 1, 'no second approval for the same token');
  });

  it('an approval stored and signed but never sent (its sender died after the commit) is sent by the next payment, once', async () => {
    const buyer = await newBuyer();
    // A third instance whose process "dies" as it broadcasts: the commit is done, nothing reached the chain.
    const dying = Object.create(evm.adapter, {
      broadcast: {
        value: async () => {
          throw new Error('the process died before its broadcast');
        },
      },
    });
    const doomed = await startTestGateway({
      ...shared,
      networks: new NetworkRegistry([dying]),
      disposeStorage: false,
    });
    try {
      const died = await pay(doomed, buyer.key, buyer.wallet, await challenge());
      assert.equal(died.status, 500, JSON.stringify(died.body));
    } finally {
      await doomed.close();
    }
    assert.equal(await sentBy(buyer.wallet), 0, 'nothing sent');
    const network = evm.adapter.info.id;
    const stored = await first.store.permit2Approvals.get(network, buyer.wallet, usdc);
    const approval = stored === undefined ? undefined : await first.store.payments.get(stored);
    assert.deepEqual([approval?.status, approval?.signedTransaction !== null], ['pending', true]);
    assert.equal((await callAs(first, buyer.key, 'GET', `/payment/history/${buyer.wallet}`)).body.total, 1);

    // The next payment finds it, sends those same bytes, and pays once it is mined: one approval.
    const paid = await pay(second, buyer.key, buyer.wallet, await challenge());
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(await sentBy(buyer.wallet), 1);
    const resumed = await first.store.payments.get(stored ?? '');
    assert.deepEqual([resumed?.status, resumed?.signature], ['confirmed', approval?.signature]);
    assert.equal(await first.store.permit2Approvals.get(network, buyer.wallet, usdc), stored);
    await redeem(buyer.key, paid.body, 4_000n);
  });

  it('a spend policy whose maxPerPayment is below the maximum refuses it: nothing approved, signed or recorded', async () => {
    const buyer = await newBuyer();
    await first.store.spending.putPolicy({
      accountId: buyer.accountId,
      keyId: null,
      limits: [
        {
          network: evm.adapter.info.id,
          asset: usdc,
          symbol: 'USDC',
          decimals: 6,
          maxPerPayment: MAX - 1n,
          maxPerDay: null,
        },
      ],
      allowedRecipients: null,
      allowedHosts: null,
      allowedNetworks: null,
      expiresAt: null,
      createdAt: Date.now(),
      updatedAt: Date.now(),
    });
    const refused = await pay(first, buyer.key, buyer.wallet, await challenge());
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.deepEqual(
      [refused.body.error.code, refused.body.error.details.limit],
      ['SPEND_LIMIT_EXCEEDED', 'maxPerPayment'],
    );
    assert.equal(await sentBy(buyer.wallet), 0);
    assert.equal(await permit2Allowance(buyer.wallet), 0n);
    assert.equal((await callAs(first, buyer.key, 'GET', `/payment/history/${buyer.wallet}`)).body.total, 0);
  });

  it('a wallet without ETH for the approval is refused 422 naming it and the shortfall; nothing signed or recorded', async () => {
    const buyer = await newBuyer(0);
    const refused = await pay(first, buyer.key, buyer.wallet, await challenge());
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'INSUFFICIENT_BALANCE');
    assert.match(refused.body.error.message, new RegExp(`${buyer.wallet}.*Permit2.*ETH short`));
    assert.match(refused.body.error.details.walletAddress, /needs [0-9.]+ ETH more/);
    assert.equal(await sentBy(buyer.wallet), 0);
    assert.equal((await callAs(first, buyer.key, 'GET', `/payment/history/${buyer.wallet}`)).body.total, 0);
  });
});
