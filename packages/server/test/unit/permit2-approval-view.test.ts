import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newPayment } from '../../src/services/payments/new-payment.ts';
import { paymentView } from '../../src/services/payments/payment-view.ts';
import { permit2ApprovalMetadata } from '../../src/services/payments/x402/permit2-approval-record.ts';

const TOKEN = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const ETH = { address: null, decimals: 18, symbol: 'ETH' } as const;

/** A custodial wallet's Permit2 approval as Permit2ApprovalService records it, confirmed. */
const approval = (changes: Record<string, unknown> = {}) =>
  newPayment(1_700_000_000_000, {
    id: 'pay_01JABCDEFGHJKMNPQRSTVWXYZ0',
    accountId: 'acct_1',
    direction: 'sent',
    mode: 'custodial',
    status: 'confirmed',
    network: 'eip155:31337',
    walletAddress: '0x1111111111111111111111111111111111111111',
    sender: '0x1111111111111111111111111111111111111111',
    recipient: TOKEN,
    amount: 0n,
    fee: 46_123_456_789_012n,
    metadata: permit2ApprovalMetadata({ address: TOKEN, symbol: 'USDC' }),
    ...changes,
  });

describe('a Permit2 approval as status and webhooks show it', () => {
  it('is described, and its network fee (what it cost) is shown in the native currency', () => {
    const view = paymentView(approval(), ETH);
    assert.deepEqual([view.type, view.amount, view.recipient], ['sent', 0, TOKEN]);
    assert.deepEqual(view.metadata, {
      description:
        "Permit2 approval of USDC (one-time): lets this wallet's x402 Permit2 payments move USDC, each only with a permit the gateway signs. Nothing was paid to anyone; its cost is the network fee (permit2Approval.fee).",
      permit2Approval: { token: TOKEN, symbol: 'USDC', fee: 0.000046123456789012 },
    });
  });

  it('a payment of a caller that writes the same metadata is not taken for one: no fee is added', () => {
    // A send is at least 0.001: a caller's payment never has amount 0, whatever its metadata says.
    const spoofed = paymentView(approval({ mode: 'custodial', amount: 1_000_000_000_000_000n }), ETH);
    assert.deepEqual(spoofed.metadata?.permit2Approval, { token: TOKEN, symbol: 'USDC' });
    // Another recipient than the token it names, or a token payment: not an approval either.
    for (const changes of [
      { recipient: '0x2222222222222222222222222222222222222222' },
      { asset: { address: TOKEN, decimals: 6 } },
      { mode: 'local' },
    ]) {
      assert.deepEqual(
        paymentView(approval(changes), ETH).metadata?.permit2Approval,
        { token: TOKEN, symbol: 'USDC' },
        JSON.stringify(changes),
      );
    }
  });
});
