import { useCallback, useEffect, useState } from 'react';
import { ApiError, api, type Session, setCsrfToken, whenSessionEnds } from './api.ts';
import { ErrorMessage } from './components/error-message.tsx';
import { AuthPage } from './pages/auth-page.tsx';
import { HomePage } from './pages/home-page.tsx';
import { KeysPage } from './pages/keys-page.tsx';
import { OverviewPage } from './pages/overview-page.tsx';
import { PasswordPage } from './pages/password-page.tsx';
import { PaymentsPage } from './pages/payments-page.tsx';
import { WalletsPage } from './pages/wallets-page.tsx';
import { WebhooksPage } from './pages/webhooks-page.tsx';
import { navigate, usePage } from './router.ts';

const PAGES = [
  { page: '', label: 'Home' },
  { page: 'usage', label: 'Plan & usage' },
  { page: 'keys', label: 'API Keys' },
  { page: 'wallets', label: 'Wallets' },
  { page: 'payments', label: 'Payments' },
  { page: 'webhooks', label: 'Webhooks' },
  { page: 'password', label: 'Password' },
] as const;

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [logOutError, setLogOutError] = useState<unknown>();
  const page = usePage();

  useEffect(() => {
    // Any 401 from here on means the session ended elsewhere (log-out, a new password, expiry).
    whenSessionEnds(() => {
      setCsrfToken('');
      setSession(null);
    });
    api<Session>('GET', '/session').then(
      (found) => {
        setCsrfToken(found.csrfToken);
        setSession(found);
      },
      () => setSession(null),
    );
  }, []);

  const loggedIn = useCallback((started: Session) => {
    setCsrfToken(started.csrfToken);
    setSession(started);
  }, []);

  // Only the gateway can end the session (the cookie is HttpOnly): while it has not said so, the page
  // stays logged in and says the log-out failed, so nobody leaves a shared computer believing they are out.
  const logOut = async () => {
    setLogOutError(undefined);
    try {
      await api('POST', '/logout');
    } catch (caught) {
      // 401: the session had ended already.
      if (!(caught instanceof ApiError && caught.status === 401)) {
        const why = caught instanceof Error ? caught.message : String(caught);
        setLogOutError(new Error(`Log-out failed, you are still logged in: ${why} Try again.`));
        return;
      }
    }
    setCsrfToken('');
    setSession(null);
    navigate('');
  };

  if (session === undefined) return <p className="loading">Loading…</p>;
  if (session === null) return <AuthPage onLoggedIn={loggedIn} />;

  const section = page.split('/')[0] ?? '';
  const current = PAGES.find((p) => p.page === section) ?? PAGES[0];
  return (
    <div className="layout">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">gate402</span>
        <nav aria-label="Dashboard sections">
          <ul>
            {PAGES.map((p) => (
              <li key={p.page}>
                <a
                  href={`/dashboard/${p.page}`}
                  aria-current={p === current ? 'page' : undefined}
                  onClick={(event) => {
                    event.preventDefault();
                    navigate(p.page);
                  }}
                >
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span className="email">{session.email}</span>
          <button type="button" className="secondary" onClick={logOut}>
            Log out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <ErrorMessage error={logOutError} />
        {current.page === '' && <HomePage />}
        {current.page === 'usage' && <OverviewPage />}
        {current.page === 'keys' && <KeysPage />}
        {current.page === 'wallets' && <WalletsPage />}
        {current.page === 'payments' && <PaymentsPage detailId={page.split('/')[1]} />}
        {current.page === 'webhooks' && <WebhooksPage />}
        {current.page === 'password' && <PasswordPage onChanged={loggedIn} />}
      </main>
    </div>
  );
}
