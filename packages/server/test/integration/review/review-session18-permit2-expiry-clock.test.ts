import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createWalletClient, type Hex, http } from 'viem';
import { EXACT_PERMIT2_PROXY_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { permit2AuthorizationOf, permit2SettleCall } from '../../../src/chains/evm/permit2-payment.ts';
import { uptoPermitOf } from '../../../src/chains/evm/upto-evm-scheme.ts';
import { UPTO_PERMIT2_PROXY_ADDRESS, uptoSettleCall } from '../../../src/chains/evm/upto-permit2-proxy.ts';
import { callAs } from '../../support/api-caller.ts';
import { type SkewedClockBuyer, startSkewedClockBuyer } from '../../support/skewed-clock-buyer.ts';
import type { TestEvm } from '../../support/test-anvil.ts';
import type { TestGateway } from '../../support/test-gateway.ts';

const PRICE = 20_000n;
const MAX = 50_000n;
const SETTLED = 12_345n;

/**
 * Review (session 18) of 999c232 (POST /payment/x402 through Permit2: "a spent nonce is never expired
 * as unpaid"). X402PayService.watch decides `gone` from the GATEWAY's clock (now > expiresAt + 60 s),
 * then reads the permit's Permit2 nonce at the node's 'latest' block; Permit2 decides with the block's
 * timestamp. A node whose head lags (or a chain whose blocks stalled) more than the margin answers
 * "unspent" for a permit the chain still takes: the payment is expired ("nothing was paid"), its spend
 * hold released, and an expired payment is never looked at again — then the seller settles it in a
 * block stamped before the deadline and the buyer's USDC moves with the gateway saying it did not.
 * Here the gateway's clock is moved ahead of the chain's (as 999c232's own test does to pass time).
 * Fixed: such a payment is expired only once the chain's finalized block is stamped past the permit's
 * deadline with its nonce unspent at that block (UptoPayer.permitEnded); until then it stays pending.
 */
describe('review-session18: a Permit2 payment is not expired on the gateway clock while the chain can still take it', () => {
  let fixture: SkewedClockBuyer;
  let evm: TestEvm;
  let gw: TestGateway;
  let usdc: Address;
  let network: string;
  let seller: { key: string; wallet: Address };
  const chainClient = () => fixture.chainClient();
  const balance = (a: Address) => fixture.balance(a);

  before(async () => {
    fixture = await startSkewedClockBuyer();
    ({ evm, gw, usdc, network, seller } = fixture);
  });

  after(() => fixture?.close());

  /** Pays `accept` from a new funded wallet; the answer, and the permit the payment header carries. */
  const payPermit2 = (accept: Record<string, unknown>) => fixture.payFromNewWallet(accept);

  /**
   * The gateway's clock is moved past the permit's deadline + margin while the chain's is not (its node
   * lags, or its blocks stalled), and the payment is looked at; then the seller settles (`settle`) in a
   * block stamped before the deadline, and it is looked at again.
   */
  async function judgedThenSettled(
    paid: Awaited<ReturnType<typeof payPermit2>>,
    deadline: bigint,
    settle: { to: Address; data: Hex },
    moved: bigint,
  ) {
    const before = await balance(paid.wallet);
    fixture.skew(30 * 60_000);
    const first = await callAs(gw, paid.key, 'POST', `/payment/x402/${paid.paymentId}/check`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const judged = (await gw.store.payments.get(paid.paymentId))?.status;

    const latest = await chainClient().getBlock();
    assert.ok(latest.timestamp < deadline, 'the chain is still before the permit deadline');
    const hash = await createWalletClient({
      account: evm.operator as Address,
      transport: http(evm.anvil.rpcUrl),
    }).sendTransaction({ ...settle, chain: null });
    const receipt = await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 });
    assert.equal(receipt.status, 'success');
    assert.equal(before - (await balance(paid.wallet)), moved, 'the buyer paid the seller');

    await callAs(gw, paid.key, 'POST', `/payment/x402/${paid.paymentId}/check`);
    const record = await gw.store.payments.get(paid.paymentId);
    assert.deepEqual(
      [judged, record?.status, record?.amount, record?.signature],
      ['pending', 'confirmed', moved, hash],
      `judged ${judged} while the permit was still usable on chain; now ${record?.status} (${record?.error ?? ''}) though ${moved} moved in ${hash}`,
    );
  }

  it('exact through Permit2: not expired while the chain can still take the permit; settled before its deadline, it is confirmed', async () => {
    fixture.skew(0);
    const paid = await payPermit2({
      scheme: 'exact',
      network,
      asset: usdc,
      amount: PRICE.toString(),
      payTo: seller.wallet,
      maxTimeoutSeconds: 600,
      extra: { name: 'USD Coin', version: '2', assetTransferMethod: 'permit2' },
    });
    const permit = permit2AuthorizationOf(paid.payload);
    assert.ok(permit !== undefined && permit.spender === EXACT_PERMIT2_PROXY_ADDRESS);
    const call = permit2SettleCall(permit);
    await judgedThenSettled(paid, permit.deadline, { to: call.to as Address, data: call.data as Hex }, PRICE);
  });

  it('upto: not expired while the chain can still take the permit; settled before its deadline, it is confirmed at what moved', async () => {
    fixture.skew(0);
    const paid = await payPermit2({
      scheme: 'upto',
      network,
      asset: usdc,
      amount: MAX.toString(),
      payTo: seller.wallet,
      maxTimeoutSeconds: 600,
      extra: {
        name: 'USD Coin',
        version: '2',
        assetTransferMethod: 'permit2',
        facilitatorAddress: evm.operator,
      },
    });
    const permit = uptoPermitOf(paid.payload);
    assert.ok(permit !== undefined);
    const settle = { to: UPTO_PERMIT2_PROXY_ADDRESS, data: uptoSettleCall(permit, SETTLED).data as Hex };
    await judgedThenSettled(paid, permit.deadline, settle, SETTLED);
  });
});
