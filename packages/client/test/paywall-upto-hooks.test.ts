import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import { createPermit2ApprovalTx } from '@x402/evm';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { type Address, createPublicClient, createWalletClient, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expressPaywall } from '../src/express.ts';
import { Gate402Client, type PaywallHookName, PaywallHookStop, UptoSettleRefused } from '../src/index.ts';
import type { UptoPayment } from '../src/upto-offer.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';

const ERC20 = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function approve(address, uint256) returns (bool)',
]);
const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';

/**
 * protect({ upto, hooks }): `payment.settle(amount)` runs the resource's settle hooks as an `exact`
 * settle does — onBeforeSettle before anything is settled (a veto settles nothing), onSettleFailure on a
 * refusal, onAfterSettle with the settlement — against the real gateway on the embedded anvil and a stock
 * @x402/fetch upto buyer.
 */
describe('gate402 paywall: upto settle runs the settle hooks', () => {
  let gateway: InProcessGateway;
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    gateway = await startGateway();
  });
  after(async () => {
    await close?.();
    await gateway?.close();
  });

  it('onBeforeSettle can veto (nothing moves), onAfterSettle sees the settled amount, onSettleFailure a refusal', async () => {
    const premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const payTo = (await premium.createWallet({ chain: 'evm' })).address;
    const anvil = (await premium.networks()).networks.find((n) => n.id === 'eip155:31337');
    const usdc = anvil?.tokens.find((t) => t.symbol === 'USDC')?.address as Address | undefined;
    assert.ok(usdc !== undefined && anvil?.rpcUrl);
    const chain = createPublicClient({ transport: http(anvil.rpcUrl) });
    const balanceOf = (address: Address) =>
      chain.readContract({ address: usdc, abi: ERC20, functionName: 'balanceOf', args: [address] });

    const account = privateKeyToAccount(generatePrivateKey());
    await premium.faucet({ address: account.address, amount: 1 });
    await premium.faucet({ address: account.address, amount: 1, token: 'USDC' });
    const wallet = createWalletClient({ account, transport: http(anvil.rpcUrl) });
    const approve = async (amount: bigint) => {
      const hash = await wallet.writeContract({
        address: usdc,
        abi: ERC20,
        functionName: 'approve',
        args: [PERMIT2, amount],
        chain: null,
      });
      await chain.waitForTransactionReceipt({ hash });
    };
    await wallet
      .sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null })
      .then((hash) => chain.waitForTransactionReceipt({ hash }));

    const calls: { hook: PaywallHookName; detail: unknown }[] = [];
    const { protect } = expressPaywall(premium);
    const app = express();
    app.get(
      '/llm',
      protect({
        price: '0.01',
        payTo,
        upto: { asset: usdc, max: '0.05' },
        hooks: {
          onBeforeSettle: (context) => {
            calls.push({ hook: 'onBeforeSettle', detail: context.requirements.scheme });
            if (context.metadata.veto === true) return { abort: true, reason: 'quota_exceeded' };
            return undefined;
          },
          onAfterVerify: (context) => {
            if (context.transportContext.request.url.includes('veto')) context.metadata.veto = true;
          },
          onAfterSettle: (context) => {
            calls.push({ hook: 'onAfterSettle', detail: context.result.amount });
          },
          onSettleFailure: (context) => {
            calls.push({ hook: 'onSettleFailure', detail: context.error.message });
          },
        },
      }),
      async (req, res) => {
        const payment = res.locals.payment as UptoPayment;
        // The buyer takes its Permit2 allowance back before the seller settles: the facilitator refuses.
        if (req.query.revoke !== undefined) await approve(0n);
        try {
          const settled = await payment.settle(String(req.query.used ?? '0.05'));
          res.set(settled.headers).json({ charged: settled.amount });
        } catch (error) {
          const kind =
            error instanceof PaywallHookStop
              ? 'vetoed'
              : error instanceof UptoSettleRefused
                ? 'refused'
                : 'other';
          res.status(402).json({ kind, error: (error as Error).message });
        }
      },
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => new Promise((resolve) => server.close(() => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/llm`;
    const buyer = x402Client.fromConfig({
      schemes: [{ network: 'eip155:31337', client: new UptoEvmScheme(account) }],
      spendControls: { allowedAssets: [{ network: 'eip155:31337', asset: usdc }] },
    });
    const pay = (query: string) => wrapFetchWithPayment(fetch, buyer)(`${url}?${query}`);
    const start = await balanceOf(account.address);

    // Settled: onBeforeSettle, then onAfterSettle with the amount that moved.
    const paid = await pay('used=0.0125');
    assert.equal(paid.status, 200, await paid.clone().text());
    assert.deepEqual(await paid.json(), { charged: '0.0125' });
    assert.deepEqual(calls.splice(0), [
      { hook: 'onBeforeSettle', detail: 'upto' },
      { hook: 'onAfterSettle', detail: '12500' },
    ]);
    assert.equal(await balanceOf(account.address), start - 12_500n);

    // Vetoed before the settle: nothing moves, no other settle hook runs.
    const vetoed = await pay('used=0.02&veto=1');
    assert.equal(vetoed.status, 402);
    assert.deepEqual(await vetoed.json(), { kind: 'vetoed', error: 'quota_exceeded' });
    assert.deepEqual(calls.splice(0), [{ hook: 'onBeforeSettle', detail: 'upto' }]);
    assert.equal(await balanceOf(account.address), start - 12_500n);

    // Refused by the facilitator: onSettleFailure is told, the settle rejects, nothing moves.
    const refused = await pay('used=0.02&revoke=1');
    assert.equal(refused.status, 402);
    assert.equal(((await refused.json()) as { kind: string }).kind, 'refused');
    const [beforeSettle, failure, ...rest] = calls.splice(0);
    assert.deepEqual(beforeSettle, { hook: 'onBeforeSettle', detail: 'upto' });
    assert.equal(failure?.hook, 'onSettleFailure');
    assert.match(String(failure?.detail), /allowance|permit2/i);
    assert.deepEqual(rest, []);
    assert.equal(await balanceOf(account.address), start - 12_500n);
  });
});
