import { useCallback, useEffect, useState } from 'react';
import { type Account, api } from '../api.ts';
import { ErrorMessage } from '../components/error-message.tsx';

const PLAN_NAMES = { standard: 'Standard', premium: 'Premium', enterprise: 'Enterprise' } as const;

/** The plan, its rate limit, and the requests counted in the current window. */
export function OverviewPage() {
  const [account, setAccount] = useState<Account>();
  const [error, setError] = useState<unknown>();
  const load = useCallback(() => api<Account>('GET', '/account').then(setAccount, setError), []);
  useEffect(() => {
    load();
  }, [load]);

  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Plan &amp; usage</h1>
      <ErrorMessage error={error} />
      {account && (
        <div className="card">
          <dl className="facts">
            <dt>Plan</dt>
            <dd data-testid="plan">{PLAN_NAMES[account.plan]}</dd>
            <dt>Rate limit</dt>
            <dd>{account.rateLimit.toLocaleString()} requests per minute, over all keys</dd>
            <dt>Used this window</dt>
            <dd data-testid="usage">
              {account.used.toLocaleString()} of {account.rateLimit.toLocaleString()}
              <meter
                min={0}
                max={account.rateLimit}
                value={Math.min(account.used, account.rateLimit)}
                aria-label="Requests used"
              />
            </dd>
            <dt>Window resets</dt>
            <dd>{new Date(account.resetAt).toLocaleTimeString()}</dd>
            <dt>Account</dt>
            <dd>
              <code>{account.id}</code>
            </dd>
          </dl>
          <button type="button" className="secondary" onClick={load}>
            Refresh
          </button>
        </div>
      )}
    </section>
  );
}
