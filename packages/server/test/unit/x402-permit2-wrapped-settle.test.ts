import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  type Address,
  bytesToHex,
  concat,
  encodeFunctionData,
  getAddress,
  type Hex,
  pad,
  parseAbi,
  toEventSelector,
  toHex,
} from 'viem';
import { paidThroughWrapper, type SettleLog } from '../../src/chains/evm/paid-through-wrapper.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS } from '../../src/chains/evm/permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from '../../src/chains/evm/permit2-proxy-abi.ts';
import { type SettledPermit, settleCallsIn } from '../../src/chains/evm/permit2-settle-calldata.ts';

const OWNER = getAddress(`0x${'b0'.repeat(20)}`);
const TOKEN = getAddress(`0x${'70'.repeat(20)}`);
const SELLER = getAddress(`0x${'5e'.repeat(20)}`);
const OTHER_SELLER = getAddress(`0x${'5f'.repeat(20)}`);

/** The permit a buyer signed: 42 000 atomic units of TOKEN from OWNER to SELLER, with Permit2 nonce 7. */
const PERMIT: SettledPermit = {
  owner: OWNER,
  token: TOKEN,
  amount: 42_000n,
  nonce: 7n,
  deadline: 1_900_000_000n,
  to: SELLER,
};
/** Another permit of the same buyer paying the same amount to the same seller: another nonce. */
const SAME_PAYMENT_OTHER_NONCE: SettledPermit = { ...PERMIT, nonce: 8n };

/** The proxy's settle call of `permit`, as a facilitator sends it. */
const settleCall = (permit: SettledPermit): Hex =>
  encodeFunctionData({
    abi: EXACT_PERMIT2_PROXY_ABI,
    functionName: 'settle',
    args: [
      {
        permitted: { token: permit.token, amount: permit.amount },
        nonce: permit.nonce,
        deadline: permit.deadline,
      },
      permit.owner,
      { to: permit.to, validAfter: 1_700_000_000n },
      bytesToHex(new Uint8Array(randomBytes(65))),
    ],
  });

/** A Multicall3-style batch: each call passed on as an ABI `bytes` argument, as any wrapper does. */
const MULTICALL_ABI = parseAbi([
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'function aggregate3(Call3[] calls) payable returns ((bool success, bytes returnData)[])',
]);
const batch = (...calls: Hex[]): Hex =>
  encodeFunctionData({
    abi: MULTICALL_ABI,
    functionName: 'aggregate3',
    args: [calls.map((callData) => ({ target: EXACT_PERMIT2_PROXY_ADDRESS, allowFailure: true, callData }))],
  });

describe('settleCallsIn: the proxy’s settle calls a transaction’s input carries', () => {
  it('finds a direct settle call, at offset 0', () => {
    assert.deepEqual(settleCallsIn(settleCall(PERMIT)), [PERMIT]);
  });

  it('finds settle calls a wrapper passes on as ABI bytes, further in, in their order', () => {
    const input = batch(settleCall(PERMIT), settleCall(SAME_PAYMENT_OTHER_NONCE));
    assert.notEqual(input.slice(0, 10), settleCall(PERMIT).slice(0, 10), 'the input is not a settle call');
    assert.deepEqual(settleCallsIn(input), [PERMIT, SAME_PAYMENT_OTHER_NONCE]);
  });

  it('finds a settle call at an offset that is not a multiple of 32 (after a 20-byte address)', () => {
    const input = concat([EXACT_PERMIT2_PROXY_ADDRESS, settleCall(PERMIT)]);
    assert.deepEqual(settleCallsIn(input), [PERMIT]);
  });

  it('reads a settle call followed by other bytes, and ignores them', () => {
    assert.deepEqual(settleCallsIn(concat([settleCall(PERMIT), '0xdeadbeef'])), [PERMIT]);
  });

  it('returns nothing, without throwing, for input that holds no settle call', () => {
    const selector = settleCall(PERMIT).slice(0, 10) as Hex;
    for (const input of [
      '0x',
      '0x13',
      '0x13cd3b',
      '0xzz13cd3b53',
      'not hex at all',
      selector,
      // The selector and less than settle's static head (7 words): truncated.
      settleCall(PERMIT).slice(0, 10 + 2 * (7 * 32 - 1)),
      concat([selector, toHex(new Uint8Array(100))]),
      encodeFunctionData({ abi: MULTICALL_ABI, functionName: 'aggregate3', args: [[]] }),
    ]) {
      assert.deepEqual(settleCallsIn(input as Hex), [], input);
    }
  });

  it('never throws on random bytes with settle’s selector sprinkled in', () => {
    const selector = settleCall(PERMIT).slice(0, 10) as Hex;
    for (let i = 0; i < 200; i++) {
      const parts = Array.from({ length: 4 }, () => bytesToHex(new Uint8Array(randomBytes(i % 300))));
      const input = concat([parts[0] ?? '0x', selector, parts[1] ?? '0x', selector, parts[2] ?? '0x']);
      // Each of the two selectors is read as at most one call.
      assert.ok(settleCallsIn(input).length <= 2);
    }
  });
});

const TRANSFER_TOPIC = toEventSelector(
  'event Transfer(address indexed from, address indexed to, uint256 value)',
);
const SETTLED_TOPIC = toEventSelector('event Settled()');

/** The token's Transfer event of a payment. */
const transferLog = (payment: Pick<SettledPermit, 'owner' | 'token' | 'amount' | 'to'>): SettleLog => ({
  address: payment.token,
  topics: [TRANSFER_TOPIC, pad(payment.owner), pad(payment.to)],
  data: pad(toHex(payment.amount)),
});
const settledLog = (emitter: Address = EXACT_PERMIT2_PROXY_ADDRESS): SettleLog => ({
  address: emitter,
  topics: [SETTLED_TOPIC],
  data: '0x',
});
/** What a settle of `payment` that ran logs. */
const ranSettleOf = (payment: SettledPermit) => [transferLog(payment), settledLog()];

describe('paidThroughWrapper: a wrapper’s input carried the settle, and its logs show that it ran', () => {
  it('yes for a carried settle of the permit whose Transfer and Settled() are logged', () => {
    assert.equal(paidThroughWrapper(PERMIT, [PERMIT], ranSettleOf(PERMIT)), true);
  });

  it('no when the input carries a settle for another nonce only, whatever the logs', () => {
    const logs = ranSettleOf(SAME_PAYMENT_OTHER_NONCE);
    assert.equal(paidThroughWrapper(PERMIT, [SAME_PAYMENT_OTHER_NONCE], logs), false);
  });

  it('no when the settle did not run: its revert swallowed (no logs), or a Transfer from elsewhere', () => {
    assert.equal(paidThroughWrapper(PERMIT, [PERMIT], []), false);
    assert.equal(paidThroughWrapper(PERMIT, [PERMIT], [transferLog(PERMIT)]), false);
    assert.equal(paidThroughWrapper(PERMIT, [PERMIT], [settledLog()]), false);
  });

  it('no when Settled() is not the proxy’s, or not right after the Transfer of this payment', () => {
    const cases: SettleLog[][] = [
      [transferLog(PERMIT), settledLog(OTHER_SELLER)],
      [settledLog(), transferLog(PERMIT)],
      [transferLog({ ...PERMIT, amount: 41_999n }), settledLog()],
      [transferLog({ ...PERMIT, to: OTHER_SELLER }), settledLog()],
      [transferLog(PERMIT), transferLog({ ...PERMIT, to: OTHER_SELLER }), settledLog()],
      [{ ...transferLog(PERMIT), address: OTHER_SELLER }, settledLog()],
    ];
    for (const logs of cases) assert.equal(paidThroughWrapper(PERMIT, [PERMIT], logs), false);
  });

  it('no when two settles of the same payment were carried and only one ran: nothing says which', () => {
    const carried = [SAME_PAYMENT_OTHER_NONCE, PERMIT];
    const oneRan = ranSettleOf(SAME_PAYMENT_OTHER_NONCE);
    assert.equal(paidThroughWrapper(PERMIT, carried, oneRan), false);
    assert.equal(paidThroughWrapper(SAME_PAYMENT_OTHER_NONCE, carried, oneRan), false);
    const bothRan = [...ranSettleOf(SAME_PAYMENT_OTHER_NONCE), ...ranSettleOf(PERMIT)];
    assert.equal(paidThroughWrapper(PERMIT, carried, bothRan), true);
    assert.equal(paidThroughWrapper(SAME_PAYMENT_OTHER_NONCE, carried, bothRan), true);
  });

  it('yes when the same settle was carried twice and ran once, or beside a settle of another payment', () => {
    assert.equal(paidThroughWrapper(PERMIT, [PERMIT, PERMIT], ranSettleOf(PERMIT)), true);
    const elsewhere: SettledPermit = { ...PERMIT, to: OTHER_SELLER };
    const logs = [...ranSettleOf(elsewhere), ...ranSettleOf(PERMIT)];
    assert.equal(paidThroughWrapper(PERMIT, [elsewhere, PERMIT], logs), true);
    assert.equal(paidThroughWrapper(PERMIT, [elsewhere, PERMIT], ranSettleOf(elsewhere)), false);
  });
});
