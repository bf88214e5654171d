import { useEffect, useState } from 'react';
import { api, type PaymentDetail } from '../api.ts';
import { CopyButton } from '../components/copy-button.tsx';
import { ErrorMessage } from '../components/error-message.tsx';
import { formatTime } from '../components/format.ts';
import { RefundButton } from '../components/refund-dialog.tsx';
import { navigate } from '../router.ts';

/** Every field of one payment, and a link to a block explorer where the network has one. */
export function PaymentDetailView({ paymentId }: { paymentId: string }) {
  const [payment, setPayment] = useState<PaymentDetail>();
  const [error, setError] = useState<unknown>();
  const [loads, setLoads] = useState(0);
  useEffect(() => {
    void loads;
    api<PaymentDetail>('GET', `/payments/${encodeURIComponent(paymentId)}`).then(setPayment, setError);
  }, [paymentId, loads]);

  return (
    <section aria-labelledby="payment-title">
      <p>
        <a
          href="/dashboard/payments"
          onClick={(e) => {
            e.preventDefault();
            navigate('payments');
          }}
        >
          ← All payments
        </a>
      </p>
      <h1 id="payment-title">Payment</h1>
      <ErrorMessage error={error} />
      {payment && (
        <div className="card">
          <dl className="facts">
            <dt>Payment id</dt>
            <dd>
              <code>{payment.paymentId}</code>
            </dd>
            <dt>Type</dt>
            <dd>
              {payment.type}
              {payment.refundOf !== undefined && (
                <>
                  {' of '}
                  <a
                    href={`/dashboard/payments/${payment.refundOf}`}
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(`payments/${payment.refundOf ?? ''}`);
                    }}
                  >
                    {payment.refundOf}
                  </a>
                  {payment.refundReason === undefined ? '' : ` (${payment.refundReason})`}
                </>
              )}
            </dd>
            <dt>Status</dt>
            <dd>
              <span className="status-badge" data-status={payment.status}>
                {payment.status}
              </span>
              {payment.status === 'reverted' ? (
                <p className="hint">
                  Its transaction left the chain after it was confirmed (a reorganisation) and can no longer
                  land: nothing was paid. Revoke whatever this payment granted.
                </p>
              ) : null}
            </dd>
            <dt>Amount</dt>
            <dd>
              {payment.amount} {payment.asset.symbol ?? 'token'}
              {payment.asset.address === null ? '' : ` (${payment.asset.address})`}
            </dd>
            <dt>Sender</dt>
            <dd>
              <code>{payment.sender}</code>
            </dd>
            <dt>Recipient</dt>
            <dd>
              <code>{payment.recipient}</code>
            </dd>
            <dt>Network</dt>
            <dd>
              <code>{payment.network}</code>
            </dd>
            <dt>Signature</dt>
            <dd>
              {payment.signature === null ? (
                'not yet'
              ) : (
                <>
                  <code>{payment.signature}</code>{' '}
                  <CopyButton text={payment.signature} label="Copy the transaction signature" />
                </>
              )}
            </dd>
            <dt>Block height</dt>
            <dd>{payment.blockHeight ?? 'not yet'}</dd>
            <dt>Confirmations</dt>
            <dd>{payment.confirmations}</dd>
            <dt>Time</dt>
            <dd>{formatTime(payment.timestamp)}</dd>
            {payment.resource !== undefined && (
              <>
                <dt>Resource</dt>
                <dd>
                  <code>{payment.resource}</code>
                </dd>
              </>
            )}
            {payment.metadata !== undefined && (
              <>
                <dt>Metadata</dt>
                <dd>
                  <pre>{JSON.stringify(payment.metadata, null, 2)}</pre>
                </dd>
              </>
            )}
            {payment.refunds !== undefined && (
              <>
                <dt>Refunds</dt>
                <dd>
                  {payment.refunds.refunded} {payment.asset.symbol ?? 'token'} refunded
                  {payment.refunds.pending > 0 ? `, ${payment.refunds.pending} under way` : ''};{' '}
                  {payment.refunds.refundable} refundable{' '}
                  <RefundButton payment={payment} onRefunded={() => setLoads((n) => n + 1)} />
                  {payment.refunds.payments.length > 0 && (
                    <ul>
                      {payment.refunds.payments.map((r) => (
                        <li key={r.paymentId}>
                          <a
                            href={`/dashboard/payments/${r.paymentId}`}
                            onClick={(e) => {
                              e.preventDefault();
                              navigate(`payments/${r.paymentId}`);
                            }}
                          >
                            {r.paymentId}
                          </a>{' '}
                          {r.amount}{' '}
                          <span className="status-badge" data-status={r.status}>
                            {r.status}
                          </span>
                        </li>
                      ))}
                    </ul>
                  )}
                </dd>
              </>
            )}
            <dt>Explorer</dt>
            <dd>
              {payment.explorerUrl === null ? (
                'none for this network'
              ) : (
                <a href={payment.explorerUrl} target="_blank" rel="noreferrer noopener">
                  View the transaction
                </a>
              )}
            </dd>
          </dl>
        </div>
      )}
    </section>
  );
}
