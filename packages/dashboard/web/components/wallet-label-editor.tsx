import { type FormEvent, useId, useState } from 'react';
import { api } from '../api.ts';
import { ErrorMessage } from './error-message.tsx';

/** As the gateway holds it (domain/wallet-label.ts): at most 64 characters once trimmed. */
const MAX_LABEL_LENGTH = 64;

/**
 * The label of one wallet, editable in place: a labelled text field and a Save button (Enter saves),
 * sent as PATCH /wallets/{address}; an empty field removes the label. The outcome is announced (a polite
 * status, or the gateway's refusal as an alert naming the field), and focus stays in the field.
 */
export function WalletLabelEditor(props: {
  address: string;
  label: string | null;
  onSaved: (label: string | null) => void;
}) {
  const ids = { field: useId(), hint: useId() };
  const [text, setText] = useState(props.label ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [status, setStatus] = useState('');

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setStatus('');
    try {
      const trimmed = text.trim();
      const saved = await api<{ label: string | null }>(
        'PATCH',
        `/wallets/${encodeURIComponent(props.address)}`,
        {
          label: trimmed === '' ? null : trimmed,
        },
      );
      setText(saved.label ?? '');
      setStatus(saved.label === null ? 'Label removed.' : `Label saved: ${saved.label}.`);
      props.onSaved(saved.label);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="wallet-label" onSubmit={save} aria-label={`Label of ${props.address}`}>
      <label htmlFor={ids.field}>
        Label<span className="visually-hidden"> of wallet {props.address}</span>
      </label>
      <div className="inline-field">
        <input
          id={ids.field}
          value={text}
          maxLength={MAX_LABEL_LENGTH}
          autoComplete="off"
          aria-describedby={ids.hint}
          onChange={(e) => setText(e.target.value)}
        />
        <button type="submit" className="secondary" disabled={busy}>
          {busy ? 'Saving…' : 'Save label'}
        </button>
      </div>
      <p className="hint" id={ids.hint}>
        Your name for this wallet, up to {MAX_LABEL_LENGTH} characters; empty removes it.
      </p>
      <p className="status" role="status">
        {status}
      </p>
      <ErrorMessage error={error} />
    </form>
  );
}

/** A wallet's label where it is shown beside its address; nothing when it has none. */
export function WalletLabel({ label }: { label: string | null }) {
  return label === null ? null : (
    <>
      <strong className="wallet-label-text" data-testid="wallet-label">
        {label}
      </strong>{' '}
    </>
  );
}
