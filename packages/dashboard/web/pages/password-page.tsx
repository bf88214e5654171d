import { type FormEvent, useId, useState } from 'react';
import { api, type Session } from '../api.ts';
import { ErrorMessage } from '../components/error-message.tsx';

/**
 * A new password, given the current one. The gateway ends every session of the user and answers a new
 * one for this browser (`onChanged`), so other browsers are logged out and this one stays in.
 */
export function PasswordPage({ onChanged }: { onChanged: (session: Session) => void }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeated, setRepeated] = useState('');
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  const ids = { current: useId(), next: useId(), repeated: useId(), help: useId() };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setDone(false);
    setError(undefined);
    if (next !== repeated) {
      setError(new Error('The new password and its repetition differ.'));
      return;
    }
    setBusy(true);
    try {
      onChanged(await api<Session>('POST', '/password', { currentPassword: current, newPassword: next }));
      setCurrent('');
      setNext('');
      setRepeated('');
      setDone(true);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="password-title">
      <h1 id="password-title">Password</h1>
      <form className="card" onSubmit={submit}>
        <h2>Change your password</h2>
        <label htmlFor={ids.current}>Current password</label>
        <input
          id={ids.current}
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={(e) => setCurrent(e.target.value)}
        />
        <label htmlFor={ids.next}>New password</label>
        <input
          id={ids.next}
          type="password"
          autoComplete="new-password"
          required
          minLength={10}
          aria-describedby={ids.help}
          value={next}
          onChange={(e) => setNext(e.target.value)}
        />
        <p id={ids.help} className="hint">
          At least 10 characters. Every other browser logged in to this account is logged out.
        </p>
        <label htmlFor={ids.repeated}>New password again</label>
        <input
          id={ids.repeated}
          type="password"
          autoComplete="new-password"
          required
          value={repeated}
          onChange={(e) => setRepeated(e.target.value)}
        />
        <ErrorMessage error={error} />
        {done && (
          <p className="success" role="status">
            Password changed. Other sessions were logged out.
          </p>
        )}
        <button type="submit" disabled={busy}>
          Change password
        </button>
      </form>
    </section>
  );
}
