import { type FormEvent, useEffect, useId, useState } from 'react';
import { api, type Session } from '../api.ts';
import { ErrorMessage } from '../components/error-message.tsx';

/** Log in, or sign up when the operator allows it (DASHBOARD_SIGNUP). */
export function AuthPage({ onLoggedIn }: { onLoggedIn: (session: Session) => void }) {
  const [mode, setMode] = useState<'login' | 'signup'>('login');
  const [signupEnabled, setSignupEnabled] = useState(false);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const emailId = useId();
  const passwordId = useId();
  const passwordHelpId = useId();

  useEffect(() => {
    api<{ signupEnabled: boolean }>('GET', '/config').then(
      (config) => setSignupEnabled(config.signupEnabled),
      () => setSignupEnabled(false),
    );
  }, []);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onLoggedIn(await api<Session>('POST', mode === 'login' ? '/login' : '/signup', { email, password }));
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  const title = mode === 'login' ? 'Log in' : 'Create an account';
  return (
    <main className="auth" id="main">
      <h1>gate402</h1>
      <form onSubmit={submit} className="card" aria-labelledby="auth-title">
        <h2 id="auth-title">{title}</h2>
        <label htmlFor={emailId}>Email</label>
        <input
          id={emailId}
          type="email"
          autoComplete="email"
          required
          value={email}
          onChange={(event) => setEmail(event.target.value)}
        />
        <label htmlFor={passwordId}>Password</label>
        <input
          id={passwordId}
          type="password"
          autoComplete={mode === 'login' ? 'current-password' : 'new-password'}
          required
          aria-describedby={mode === 'signup' ? passwordHelpId : undefined}
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
        {mode === 'signup' && (
          <p id={passwordHelpId} className="hint">
            At least 10 characters.
          </p>
        )}
        <ErrorMessage error={error} />
        <button type="submit" disabled={busy}>
          {mode === 'login' ? 'Log in' : 'Sign up'}
        </button>
        {signupEnabled && (
          <p className="switch">
            {mode === 'login' ? 'No account yet? ' : 'Already have an account? '}
            <button
              type="button"
              className="link"
              onClick={() => {
                setMode(mode === 'login' ? 'signup' : 'login');
                setError(undefined);
              }}
            >
              {mode === 'login' ? 'Sign up' : 'Log in'}
            </button>
          </p>
        )}
        {!signupEnabled && <p className="hint">Accounts on this gateway are created by its operator.</p>}
      </form>
    </main>
  );
}
