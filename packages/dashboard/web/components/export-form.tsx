import { type FormEvent, useId, useState } from 'react';
import { api, type Wallet } from '../api.ts';
import { ErrorMessage } from './error-message.tsx';
import { shorten } from './format.ts';

const EXPORT_PATH = '/payments/export';

/**
 * Downloads the account's payments of a date range as CSV or JSON Lines (GET /dashboard/api/payments/export,
 * the file GET /payment/export gives). The browser downloads the file itself, streamed to disk, so a
 * million rows never sit in the page's memory; a HEAD first checks the request, so a refusal is shown
 * here with its field instead of a page of JSON.
 */
export function ExportForm({ wallets }: { wallets: readonly Wallet[] }) {
  const id = useId();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [wallet, setWallet] = useState('');
  const [format, setFormat] = useState<'csv' | 'jsonl'>('csv');
  const [error, setError] = useState<unknown>();
  const [status, setStatus] = useState('');

  const download = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setStatus('');
    const query = new URLSearchParams({ format });
    if (from !== '') query.set('from', from);
    if (to !== '') query.set('to', to);
    if (wallet !== '') query.set('wallet', wallet);
    const path = `${EXPORT_PATH}?${query}`;
    const url = `/dashboard/api${path}`;
    try {
      const check = await fetch(url, { method: 'HEAD', credentials: 'same-origin' });
      if (!check.ok) {
        // The same request as GET answers the refusal with its JSON error body.
        await api('GET', path);
        throw new Error(`The export was refused (${check.status}).`);
      }
    } catch (caught) {
      setError(caught);
      return;
    }
    // Content-Disposition: attachment, so the page stays where it is while the file downloads.
    window.location.assign(url);
    setStatus('Your download has started.');
  };

  return (
    <section className="card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Export payments</h2>
      <form onSubmit={download} aria-label="Export payments" data-testid="export-form">
        <div>
          <label htmlFor={`${id}-from`}>From (UTC)</label>
          <input
            id={`${id}-from`}
            type="date"
            value={from}
            max={to || undefined}
            onChange={(e) => setFrom(e.target.value)}
          />
        </div>
        <div>
          <label htmlFor={`${id}-to`}>To, included (UTC)</label>
          <input
            id={`${id}-to`}
            type="date"
            value={to}
            min={from || undefined}
            onChange={(e) => setTo(e.target.value)}
          />
        </div>
        <div>
          <label htmlFor={`${id}-wallet`}>Wallet</label>
          <select id={`${id}-wallet`} value={wallet} onChange={(e) => setWallet(e.target.value)}>
            <option value="">All wallets</option>
            {wallets.map((w) => (
              <option key={w.address} value={w.address}>
                {w.label === null ? '' : `${w.label} · `}
                {w.chain === 'solana' ? 'Solana' : 'EVM'} {shorten(w.address)}
              </option>
            ))}
          </select>
        </div>
        <fieldset>
          <legend>Format</legend>
          <label>
            <input
              type="radio"
              name={`${id}-format`}
              value="csv"
              checked={format === 'csv'}
              onChange={() => setFormat('csv')}
            />{' '}
            CSV (spreadsheets)
          </label>
          <label>
            <input
              type="radio"
              name={`${id}-format`}
              value="jsonl"
              checked={format === 'jsonl'}
              onChange={() => setFormat('jsonl')}
            />{' '}
            JSON Lines
          </label>
        </fieldset>
        <button type="submit">Download</button>
      </form>
      <p className="hint">Amounts are exact, in each payment's asset, with its atomic units beside them.</p>
      <p role="status">{status}</p>
      <ErrorMessage error={error} />
    </section>
  );
}
