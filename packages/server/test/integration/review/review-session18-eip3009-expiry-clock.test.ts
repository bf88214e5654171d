import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createWalletClient, encodeFunctionData, type Hex, http, parseAbi } from 'viem';
import { callAs } from '../../support/api-caller.ts';
import { type SkewedClockBuyer, startSkewedClockBuyer } from '../../support/skewed-clock-buyer.ts';
import type { TestEvm } from '../../support/test-anvil.ts';
import type { TestGateway } from '../../support/test-gateway.ts';

const TOKEN_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
]);
const PRICE = 20_000n;

interface SignedAuthorization {
  readonly signature: Hex;
  readonly authorization: {
    from: Address;
    to: Address;
    value: string;
    validAfter: string;
    validBefore: string;
    nonce: Hex;
  };
}

/**
 * Review (session 18), after fb3822e (the same rule for Permit2): X402PayService.watch expired an EVM
 * exact payment by EIP-3009 (transferWithAuthorization) on the GATEWAY's clock (now > validBefore + 60 s),
 * dropping the chain's own answer. The token judges validBefore by the block's timestamp, so a node that
 * lags, or a chain whose blocks stalled, still takes the authorization: the payment was expired ("nothing
 * was paid"), its spend hold released, never looked at again — and the seller's settlement inside
 * validBefore then moved the buyer's USDC with the record saying expired. Here the gateway's clock is
 * moved ahead of the chain's. Fixed: expired only once the chain's finalized block is stamped at or after
 * validBefore with authorizationState(from, nonce) unused at that block (ExactScheme.authorizationEnded).
 */
describe('review-session18: an EIP-3009 payment is not expired on the gateway clock while the chain can still take it', () => {
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

  /** Pays an EIP-3009 `exact` option valid `seconds` from a new funded wallet. */
  async function pay(seconds: number) {
    const paid = await fixture.payFromNewWallet({
      scheme: 'exact',
      network,
      asset: usdc,
      amount: PRICE.toString(),
      payTo: seller.wallet,
      maxTimeoutSeconds: seconds,
      extra: { name: 'USD Coin', version: '2' },
    });
    const payload = paid.payload as unknown as SignedAuthorization;
    assert.ok(payload.authorization !== undefined, 'an EIP-3009 authorization');
    return { ...paid, payload };
  }

  const check = async (p: Awaited<ReturnType<typeof pay>>) => {
    const answer = await callAs(gw, p.key, 'POST', `/payment/x402/${p.paymentId}/check`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const record = await gw.store.payments.get(p.paymentId);
    assert.ok(record !== undefined);
    return record;
  };

  it('not expired while the chain can still take the authorization; settled before validBefore, it is confirmed', async () => {
    fixture.skew(0);
    const paid = await pay(600);
    const { authorization: a, signature } = paid.payload;
    const before = await balance(paid.wallet);

    // The gateway's clock is past validBefore + margin; the chain's is not (its node lags, or it stalled).
    fixture.skew(30 * 60_000);
    const judged = (await check(paid)).status;

    // The seller submits the authorization in a block stamped before validBefore: the token takes it.
    const latest = await chainClient().getBlock();
    assert.ok(latest.timestamp < BigInt(a.validBefore), 'the chain is still before validBefore');
    const hash = await createWalletClient({
      account: evm.operator as Address,
      transport: http(evm.anvil.rpcUrl),
    }).sendTransaction({
      to: usdc,
      data: encodeFunctionData({
        abi: TOKEN_ABI,
        functionName: 'transferWithAuthorization',
        args: [
          a.from,
          a.to,
          BigInt(a.value),
          BigInt(a.validAfter),
          BigInt(a.validBefore),
          a.nonce,
          signature,
        ],
      }),
      chain: null,
    });
    const receipt = await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 });
    assert.equal(receipt.status, 'success');
    assert.equal(before - (await balance(paid.wallet)), PRICE, 'the buyer paid the seller');

    const record = await check(paid);
    assert.deepEqual(
      [judged, record.status, record.amount, record.signature],
      ['pending', 'confirmed', PRICE, hash],
      `judged ${judged} while the authorization was still usable on chain; now ${record.status} (${record.error ?? ''}) though ${PRICE} moved in ${hash}`,
    );
  });

  // Last: it mines blocks past validBefore, moving the chain's clock ahead.
  it('an unused authorization stays pending on the gateway clock, and expires once the chain finalizes a block at or after validBefore', async () => {
    fixture.skew(0);
    const paid = await pay(2);
    const validBefore = BigInt(paid.payload.authorization.validBefore);
    fixture.skew(30 * 60_000);
    assert.equal((await check(paid)).status, 'pending', 'the chain has no finalized block at validBefore');

    // anvil's finalized block is 64 behind the latest: 70 blocks 3 s apart put it some 18 s past now.
    await chainClient().request({ method: 'anvil_mine' as never, params: ['0x46', '0x3'] as never });
    const finalized = await chainClient().getBlock({ blockTag: 'finalized' });
    assert.ok(
      finalized.timestamp >= validBefore,
      `finalized at ${finalized.timestamp}, validBefore ${validBefore}`,
    );
    const record = await check(paid);
    assert.equal(record.status, 'expired', record.error ?? '');
    assert.match(record.error ?? '', /nothing was paid/);
  });
});
