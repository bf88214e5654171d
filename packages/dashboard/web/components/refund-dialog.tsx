import { useId, useRef, useState } from 'react';
import { api, type PaymentDetail } from '../api.ts';
import { ErrorMessage } from './error-message.tsx';

/** What the dashboard's refund route answers (POST /payment/refund's answer). */
interface RefundAnswer {
  paymentId: string;
  status: string;
  amount: number;
  mode: 'custodial' | 'local';
  /** Set while the refund waits for the refunded payment to be finalized before it is sent. */
  heldUntil?: string;
}

/**
 * The Refund button of a received payment, and the dialog that confirms it (docs/refunds.md). Nothing is
 * sent until "Refund" inside the dialog is pressed; the dialog is a native modal `<dialog>`, so focus moves
 * into it, stays there, and Escape or Cancel closes it, and it is announced with its title. One
 * Idempotency-Key per opening: pressing Refund again after a lost answer makes no second refund.
 */
export function RefundButton(props: { payment: PaymentDetail; onRefunded: () => void }) {
  const { payment } = props;
  const dialog = useRef<HTMLDialogElement>(null);
  const [key, setKey] = useState('');
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<RefundAnswer>();
  const ids = { title: useId(), what: useId(), amount: useId(), reason: useId() };

  const refundable = payment.refunds?.refundable ?? 0;
  const paid = payment.status === 'confirmed' || payment.status === 'finalized';
  if (payment.type !== 'received' || !paid || refundable <= 0) {
    return done === undefined ? null : <Done answer={done} symbol={symbolOf(payment)} />;
  }
  const symbol = symbolOf(payment);

  const open = () => {
    setKey(crypto.randomUUID());
    setAmount('');
    setReason('');
    setError(undefined);
    dialog.current?.showModal();
  };
  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const body: Record<string, unknown> = { idempotencyKey: key };
      if (amount.trim() !== '') body.amount = Number(amount);
      if (reason.trim() !== '') body.reason = reason.trim();
      const answer = await api<RefundAnswer>(
        'POST',
        `/payments/${encodeURIComponent(payment.paymentId)}/refund`,
        body,
      );
      setDone(answer);
      dialog.current?.close();
      props.onRefunded();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <button type="button" className="danger small" onClick={open}>
        Refund
      </button>
      {done !== undefined && <Done answer={done} symbol={symbol} />}
      <dialog ref={dialog} aria-labelledby={ids.title} aria-describedby={ids.what} className="refund-dialog">
        <form
          method="dialog"
          onSubmit={(event) => {
            event.preventDefault();
            void submit();
          }}
        >
          <h2 id={ids.title}>Refund this payment?</h2>
          <p id={ids.what}>
            Sends money back to the payer <code>{payment.sender}</code> from the wallet that received it, in{' '}
            {symbol} on <code>{payment.network}</code>. Up to {refundable} {symbol} can be refunded. This
            cannot be undone.
          </p>
          <label htmlFor={ids.amount}>Amount ({symbol})</label>
          <input
            id={ids.amount}
            inputMode="decimal"
            value={amount}
            placeholder={String(refundable)}
            aria-describedby={`${ids.amount}-hint`}
            onChange={(e) => setAmount(e.target.value)}
          />
          <p className="hint" id={`${ids.amount}-hint`}>
            Leave empty to refund all {refundable} {symbol}.
          </p>
          <label htmlFor={ids.reason}>Reason (optional)</label>
          <input id={ids.reason} value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} />
          <ErrorMessage error={error} />
          <div className="actions">
            <button type="submit" className="danger" disabled={busy}>
              {busy ? 'Refunding…' : `Refund ${amount.trim() === '' ? refundable : amount.trim()} ${symbol}`}
            </button>
            <button type="button" className="secondary" onClick={() => dialog.current?.close()}>
              Cancel
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

function Done({ answer, symbol }: { answer: RefundAnswer; symbol: string }) {
  return (
    <p className="hint" role="status">
      Refund <code>{answer.paymentId}</code> of {answer.amount} {symbol}:{' '}
      {answer.mode === 'local'
        ? 'built — sign and broadcast its transaction with the wallet'
        : answer.heldUntil !== undefined
          ? 'held — it is sent once this payment is finalized'
          : answer.status}
      .
    </p>
  );
}

function symbolOf(payment: PaymentDetail): string {
  return payment.asset.symbol ?? payment.asset.address ?? 'token';
}
