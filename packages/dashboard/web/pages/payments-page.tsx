import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { api, type PaymentEntry, type PaymentEvent, type Wallet } from '../api.ts';
import { ErrorMessage } from '../components/error-message.tsx';
import { ExportForm } from '../components/export-form.tsx';
import { formatTime, shorten } from '../components/format.ts';
import { WalletLabel } from '../components/wallet-label-editor.tsx';
import { useLivePayments } from '../live-payments.ts';
import { navigate } from '../router.ts';
import { PaymentDetailView } from './payment-detail.tsx';

const PAGE_SIZE = 20;
const LIVE_MAX = 50;
const STATUSES = ['pending', 'submitted', 'confirmed', 'finalized', 'failed', 'expired', 'reverted'] as const;

interface Filters {
  wallet: string;
  type: '' | 'sent' | 'received';
  status: '' | (typeof STATUSES)[number];
}

/** History with filters and pages, the live list fed by the payment stream, and one payment in full. */
export function PaymentsPage({ detailId }: { detailId: string | undefined }) {
  if (detailId !== undefined && detailId !== '') return <PaymentDetailView paymentId={detailId} />;
  return <PaymentList />;
}

function PaymentList() {
  const [filters, setFilters] = useState<Filters>({ wallet: '', type: '', status: '' });
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<{ total: number; payments: PaymentEntry[] }>();
  const [wallets, setWallets] = useState<Wallet[]>([]);
  const [events, setEvents] = useState<PaymentEvent[]>([]);
  const [error, setError] = useState<unknown>();
  const ids = { wallet: useId(), type: useId(), status: useId() };

  const load = useCallback(() => {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(offset) });
    if (filters.wallet !== '') query.set('wallet', filters.wallet);
    if (filters.type !== '') query.set('type', filters.type);
    if (filters.status !== '') query.set('status', filters.status);
    return api<{ total: number; payments: PaymentEntry[] }>('GET', `/payments?${query}`).then(
      setPage,
      setError,
    );
  }, [filters, offset]);

  useEffect(() => {
    load();
  }, [load]);

  useEffect(() => {
    api<{ wallets: Wallet[] }>('GET', '/wallets').then((r) => setWallets(r.wallets), setError);
  }, []);

  // The live list: events as the gateway records them, resumed without gap or repeat after a dropped
  // connection. Each event also refreshes the history page shown (once for a burst, as after a resume).
  const refresh = useRef<ReturnType<typeof setTimeout>>(undefined);
  const reloadSoon = useCallback(() => {
    clearTimeout(refresh.current);
    refresh.current = setTimeout(load, 200);
  }, [load]);
  useEffect(() => () => clearTimeout(refresh.current), []);
  const live = useLivePayments((event) => {
    setEvents((previous) => [event, ...previous.filter((e) => e.id !== event.id)].slice(0, LIVE_MAX));
    reloadSoon();
  }, reloadSoon);

  const change = (next: Partial<Filters>) => {
    setFilters({ ...filters, ...next });
    setOffset(0);
  };

  // The account's own wallets by address: a counterparty that is one of them shows its label.
  const labels = new Map(wallets.map((w) => [w.address, w.label]));
  const total = page?.total ?? 0;
  return (
    <section aria-labelledby="payments-title">
      <h1 id="payments-title">Payments</h1>
      <section className="card live" aria-labelledby="live-title">
        <h2 id="live-title">
          Live <span className={live.state === 'connected' ? 'dot on' : 'dot'} aria-hidden="true" />
          <span className="visually-hidden">({live.state})</span>
        </h2>
        {live.notice !== undefined && (
          <p className="hint" role="status">
            {live.notice}{' '}
            {live.state === 'paused' && (
              <button type="button" className="secondary small" onClick={live.resume}>
                Resume live updates
              </button>
            )}
          </p>
        )}
        {events.length === 0 && <p className="hint">Payment events appear here as they happen.</p>}
        <ol className="live-list" aria-live="polite" data-testid="live-list">
          {events.map((event) => (
            <li key={event.id} data-event-id={event.id}>
              <span className="event-type">{event.type}</span> {event.amount}{' '}
              <a
                href={`/dashboard/payments/${String(event.data.paymentId ?? '')}`}
                onClick={(e) => {
                  e.preventDefault();
                  navigate(`payments/${String(event.data.paymentId ?? '')}`);
                }}
              >
                {String(event.data.paymentId ?? '')}
              </a>{' '}
              <span className="status-badge" data-status={String(event.data.status ?? '')}>
                {String(event.data.status ?? '')}
              </span>{' '}
              <time>{new Date(event.createdAt).toLocaleTimeString()}</time>
            </li>
          ))}
        </ol>
      </section>

      <form className="filters" onSubmit={(event) => event.preventDefault()} aria-label="Filter payments">
        <div>
          <label htmlFor={ids.wallet}>Wallet</label>
          <select id={ids.wallet} value={filters.wallet} onChange={(e) => change({ wallet: e.target.value })}>
            <option value="">All wallets</option>
            {wallets.map((w) => (
              <option key={w.address} value={w.address}>
                {w.label === null ? '' : `${w.label} · `}
                {w.chain === 'solana' ? 'Solana' : 'EVM'} {shorten(w.address)}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={ids.type}>Type</label>
          <select
            id={ids.type}
            value={filters.type}
            onChange={(e) => change({ type: e.target.value as Filters['type'] })}
          >
            <option value="">Sent and received</option>
            <option value="sent">Sent</option>
            <option value="received">Received</option>
          </select>
        </div>
        <div>
          <label htmlFor={ids.status}>Status</label>
          <select
            id={ids.status}
            value={filters.status}
            onChange={(e) => change({ status: e.target.value as Filters['status'] })}
          >
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      </form>
      <ErrorMessage error={error} />
      <div className="table-wrap">
        <table data-testid="history">
          <caption>
            History{' '}
            {total > 0 ? `${offset + 1}–${Math.min(offset + PAGE_SIZE, total)} of ${total}` : '(no payments)'}
          </caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Type</th>
              <th scope="col">Amount</th>
              <th scope="col">Counterparty</th>
              <th scope="col">Status</th>
              <th scope="col">Payment</th>
            </tr>
          </thead>
          <tbody>
            {page?.payments.map((p) => (
              <tr key={p.paymentId}>
                <td>{formatTime(p.timestamp)}</td>
                <td>{p.type}</td>
                <td>{p.amount}</td>
                <td title={p.recipient ?? p.sender}>
                  <WalletLabel label={labels.get(p.recipient ?? p.sender ?? '') ?? null} />
                  <code>{shorten(p.recipient ?? p.sender ?? '')}</code>
                </td>
                <td>
                  <span className="status-badge" data-status={p.status}>
                    {p.status}
                  </span>
                </td>
                <td>
                  <a
                    href={`/dashboard/payments/${p.paymentId}`}
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(`payments/${p.paymentId}`);
                    }}
                  >
                    {shorten(p.paymentId, 8)}
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav className="pager" aria-label="History pages">
        <button
          type="button"
          className="secondary"
          disabled={offset === 0}
          onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}
        >
          Newer
        </button>
        <button
          type="button"
          className="secondary"
          disabled={offset + PAGE_SIZE >= total}
          onClick={() => setOffset(offset + PAGE_SIZE)}
        >
          Older
        </button>
      </nav>
      <ExportForm wallets={wallets} />
    </section>
  );
}
