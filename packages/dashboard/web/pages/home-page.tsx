import { useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { type AccountSummary, api, type PaymentEntry, type Wallet } from '../api.ts';
import { ErrorMessage } from '../components/error-message.tsx';
import {
  atomicToDecimal,
  formatDecimal,
  formatMoney,
  formatTime,
  formatTokenAmount,
  shorten,
} from '../components/format.ts';
import { VolumeChart } from '../components/volume-chart.tsx';
import { WalletLabel } from '../components/wallet-label-editor.tsx';
import { useLivePayments } from '../live-payments.ts';
import { navigate } from '../router.ts';

const WINDOWS = [7, 30, 90] as const;
const RECENT = 8;

type AssetRow = AccountSummary['assets'][number];
const assetId = (a: { network: string; asset: string | null }) => `${a.network}|${a.asset ?? ''}`;
const unitOf = (a: { symbol: string | null; asset: string | null }) =>
  a.symbol ?? (a.asset === null ? '' : shorten(a.asset, 4));

/**
 * The business at a glance: paid volume received and sent per day (chart and table) for one asset at a
 * time, totals per asset, the resources that earned most, balances per wallet and asset, and the latest
 * payments, refreshed as payment events arrive.
 */
export function HomePage() {
  const [days, setDays] = useState<(typeof WINDOWS)[number]>(30);
  const [summary, setSummary] = useState<AccountSummary>();
  const [wallets, setWallets] = useState<Wallet[]>();
  const [recent, setRecent] = useState<PaymentEntry[]>();
  const [chosen, setChosen] = useState<string>();
  const [error, setError] = useState<unknown>();
  const ids = { window: useId(), asset: useId() };

  const load = useCallback(() => {
    setError(undefined);
    api<AccountSummary>('GET', `/account/summary?days=${days}`).then(setSummary, setError);
    api<{ wallets: Wallet[] }>('GET', '/wallets').then((r) => setWallets(r.wallets), setError);
    api<{ payments: PaymentEntry[] }>('GET', `/payments?limit=${RECENT}&offset=0`).then(
      (r) => setRecent(r.payments),
      setError,
    );
  }, [days]);
  useEffect(() => {
    load();
  }, [load]);

  // New payments move every figure: reload once per burst of events.
  const refresh = useRef<ReturnType<typeof setTimeout>>(undefined);
  const reloadSoon = useCallback(() => {
    clearTimeout(refresh.current);
    refresh.current = setTimeout(load, 300);
  }, [load]);
  useEffect(() => () => clearTimeout(refresh.current), []);
  const live = useLivePayments(reloadSoon, reloadSoon);

  const assets = summary?.assets ?? [];
  // Networks by name where the account has a wallet on them (the summary names them by CAIP-2 id).
  const networkNames = new Map((wallets ?? []).map((w) => [w.network, w.networkName ?? w.network]));
  const networkName = (id: string) => networkNames.get(id) ?? id;
  const shown: AssetRow | undefined = assets.find((a) => assetId(a) === chosen) ?? assets[0];
  const points = useMemo(
    () =>
      shown === undefined || summary === undefined
        ? []
        : summary.daily
            .filter((d) => assetId(d) === assetId(shown))
            .map((d) => ({ date: d.date, received: Number(d.received.amount), sent: Number(d.sent.amount) })),
    [summary, shown],
  );
  const shownDays =
    summary === undefined || shown === undefined
      ? []
      : summary.daily.filter((d) => assetId(d) === assetId(shown));

  return (
    <section aria-labelledby="home-title">
      <h1 id="home-title">Home</h1>
      <ErrorMessage error={error} />
      <div className="toolbar">
        <label htmlFor={ids.window}>Period</label>
        <select
          id={ids.window}
          value={days}
          onChange={(e) => setDays(Number(e.target.value) as (typeof WINDOWS)[number])}
        >
          {WINDOWS.map((d) => (
            <option key={d} value={d}>
              Last {d} days
            </option>
          ))}
        </select>
        <span className="live-state" role="status">
          Live <span className={live.state === 'connected' ? 'dot on' : 'dot'} aria-hidden="true" />
          <span className="visually-hidden">({live.state})</span>
          {live.notice !== undefined && <span className="hint"> {live.notice}</span>}
        </span>
      </div>

      {summary !== undefined && (
        <>
          <h2>Totals</h2>
          {assets.length === 0 ? (
            <p className="hint" data-testid="no-volume">
              No paid payments in the last {summary.days} days.
            </p>
          ) : (
            <ul className="totals" aria-label="Totals per asset">
              {assets.map((a) => (
                <li key={assetId(a)} className="card total" data-testid="asset-total">
                  <h3>
                    {unitOf(a) || 'Unknown asset'} <span className="hint">{networkName(a.network)}</span>
                  </h3>
                  <dl className="facts">
                    <dt>Received</dt>
                    <dd title={`${a.received.amount} ${unitOf(a)}`} data-testid="received">
                      {formatMoney(a.received.amount, a.symbol, a.asset)} ·{' '}
                      {a.received.count.toLocaleString()} {a.received.count === 1 ? 'payment' : 'payments'}
                    </dd>
                    {a.refunded.count > 0 && (
                      <>
                        <dt>Refunded</dt>
                        <dd title={`${a.refunded.amount} ${unitOf(a)}`} data-testid="refunded">
                          {formatMoney(a.refunded.amount, a.symbol, a.asset)} ·{' '}
                          {a.refunded.count.toLocaleString()} {a.refunded.count === 1 ? 'refund' : 'refunds'}
                        </dd>
                      </>
                    )}
                    <dt>Sent</dt>
                    <dd title={`${a.sent.amount} ${unitOf(a)}`} data-testid="sent">
                      {formatMoney(a.sent.amount, a.symbol, a.asset)} · {a.sent.count.toLocaleString()}{' '}
                      {a.sent.count === 1 ? 'payment' : 'payments'}
                    </dd>
                  </dl>
                </li>
              ))}
            </ul>
          )}

          {shown !== undefined && (
            <figure className="card">
              <figcaption>
                <label htmlFor={ids.asset}>Daily volume of </label>
                <select id={ids.asset} value={assetId(shown)} onChange={(e) => setChosen(e.target.value)}>
                  {assets.map((a) => (
                    <option key={assetId(a)} value={assetId(a)}>
                      {unitOf(a) || 'Unknown asset'} on {networkName(a.network)}
                    </option>
                  ))}
                </select>{' '}
                over the last {summary.days} days (UTC days; received in green, sent in blue)
              </figcaption>
              <VolumeChart points={points} from={summary.from} days={summary.days} unit={unitOf(shown)} />
              <details>
                <summary>The same figures as a table</summary>
                <div className="table-wrap">
                  <table>
                    <caption>Daily volume, {unitOf(shown)}</caption>
                    <thead>
                      <tr>
                        <th scope="col">Day (UTC)</th>
                        <th scope="col">Received</th>
                        <th scope="col">Sent</th>
                      </tr>
                    </thead>
                    <tbody>
                      {shownDays.map((d) => (
                        <tr key={d.date}>
                          <td>{d.date}</td>
                          <td title={d.received.amount}>
                            {formatDecimal(d.received.amount)} ({d.received.count})
                          </td>
                          <td title={d.sent.amount}>
                            {formatDecimal(d.sent.amount)} ({d.sent.count})
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              </details>
            </figure>
          )}

          <h2>Top resources</h2>
          {summary.topResources.length === 0 ? (
            <p className="hint">No resource was paid for in this period.</p>
          ) : (
            <div className="table-wrap">
              <table data-testid="top-resources">
                <caption>What earned most, per asset</caption>
                <thead>
                  <tr>
                    <th scope="col">Resource</th>
                    <th scope="col">Revenue</th>
                    <th scope="col">Payments</th>
                  </tr>
                </thead>
                <tbody>
                  {summary.topResources.map((r) => (
                    <tr key={`${assetId(r)}|${r.resource}`}>
                      <td>
                        <code>{r.resource}</code>
                      </td>
                      <td title={`${r.amount} ${unitOf(r)}`}>
                        {formatMoney(r.amount, r.symbol, r.asset)}
                        {r.refunded !== '0' && (
                          <span className="hint">
                            {' '}
                            (after {formatMoney(r.refunded, r.symbol, r.asset)} refunded)
                          </span>
                        )}
                      </td>
                      <td>{r.count.toLocaleString()}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}

      <div className="columns">
        <div>
          <h2>Recent payments</h2>
          {recent !== undefined && recent.length === 0 && <p className="hint">No payments yet.</p>}
          {recent !== undefined && recent.length > 0 && (
            <ul className="recent" aria-label="Recent payments">
              {recent.map((p) => (
                <li key={p.paymentId}>
                  <a
                    href={`/dashboard/payments/${p.paymentId}`}
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(`payments/${p.paymentId}`);
                    }}
                  >
                    {p.type === 'sent' ? 'Sent' : p.type === 'refund' ? 'Refund' : 'Received'}{' '}
                    {p.amount.toLocaleString(undefined, { maximumFractionDigits: 6 })}{' '}
                    {p.asset.symbol ?? (p.asset.address === null ? '' : shorten(p.asset.address, 4))}
                  </a>{' '}
                  <span className="hint">
                    {p.status} · {formatTime(p.timestamp)}
                  </span>
                </li>
              ))}
            </ul>
          )}
        </div>
        <div>
          <h2>Balances</h2>
          {wallets !== undefined && wallets.length === 0 && <p className="hint">No wallets yet.</p>}
          {wallets !== undefined && wallets.length > 0 && (
            <ul className="balances" aria-label="Balances per wallet">
              {wallets.map((w) => (
                <li key={w.address} data-testid="wallet-balance">
                  <WalletLabel label={w.label} />
                  <code title={w.address}>{shorten(w.address)}</code>{' '}
                  <span className="hint">{w.networkName ?? w.network}</span>
                  <ul>
                    <li>
                      {w.balance === null
                        ? 'balance unavailable'
                        : `${w.balance.toLocaleString(undefined, { maximumFractionDigits: 6 })} ${w.currency ?? ''}`}
                    </li>
                    {(w.tokens ?? []).map((t) => (
                      <li key={t.address} title={`${t.address}: ${formatTokenAmount(t.amount, t.decimals)}`}>
                        {formatDecimal(atomicToDecimal(t.amount, t.decimals))}{' '}
                        {t.symbol ?? shorten(t.address, 4)}
                      </li>
                    ))}
                  </ul>
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
    </section>
  );
}
