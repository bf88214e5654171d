import { useCallback, useEffect, useState } from 'react';
import { api, type Wallet } from '../api.ts';
import { CopyButton } from '../components/copy-button.tsx';
import { ErrorMessage } from '../components/error-message.tsx';
import { formatTokenAmount, shorten } from '../components/format.ts';
import { QrCode } from '../components/qr-code.tsx';
import { WalletLabel, WalletLabelEditor } from '../components/wallet-label-editor.tsx';
import { WatchAddressForm } from '../components/watch-address-form.tsx';

/**
 * Custodial wallets (create, see native and token balances and addresses, copy, QR, fund from the faucet
 * locally, in the native currency or the local chain's tokens, name them with a label) and watch-only
 * addresses, registered on proof of control.
 */
export function WalletsPage() {
  const [wallets, setWallets] = useState<Wallet[]>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState<string | undefined>();
  const [funded, setFunded] = useState<string | undefined>();

  const load = useCallback(
    () => api<{ wallets: Wallet[] }>('GET', '/wallets').then((r) => setWallets(r.wallets), setError),
    [],
  );
  useEffect(() => {
    load();
  }, [load]);

  const act = async (what: string, work: () => Promise<void>) => {
    setBusy(what);
    setError(undefined);
    try {
      await work();
      await load();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(undefined);
    }
  };

  const labelled = (address: string, label: string | null) =>
    setWallets((listed) => listed?.map((w) => (w.address === address ? { ...w, label } : w)));

  const create = (chain: 'solana' | 'evm') =>
    act(`create-${chain}`, async () => {
      await api('POST', '/wallets', { chain });
    });

  const fund = (wallet: Wallet) =>
    act(`fund-${wallet.address}`, async () => {
      const result = await api<{ amount: number; currency: string }>(
        'POST',
        `/wallets/${encodeURIComponent(wallet.address)}/faucet`,
      );
      setFunded(`Sent ${result.amount} ${result.currency} to ${wallet.address}.`);
    });

  const fundToken = (wallet: Wallet, token: string) =>
    act(`fund-${token}-${wallet.address}`, async () => {
      const result = await api<{ amount: number; currency: string }>(
        'POST',
        `/wallets/${encodeURIComponent(wallet.address)}/faucet`,
        { token },
      );
      setFunded(`Sent ${result.amount} ${result.currency} to ${wallet.address}.`);
    });

  return (
    <section aria-labelledby="wallets-title">
      <h1 id="wallets-title">Wallets</h1>
      <p>Custodial wallets: the gateway keeps their keys, encrypted, and signs your payments with them.</p>
      <div className="actions">
        <button type="button" disabled={busy !== undefined} onClick={() => create('solana')}>
          Create Solana wallet
        </button>
        <button type="button" disabled={busy !== undefined} onClick={() => create('evm')}>
          Create EVM wallet
        </button>
      </div>
      <WatchAddressForm onRegistered={load} />
      <ErrorMessage error={error} />
      <p className="status" aria-live="polite">
        {busy?.startsWith('fund-') ? 'Funding…' : busy?.startsWith('create-') ? 'Creating…' : (funded ?? '')}
      </p>
      {wallets?.length === 0 && <p>No wallets yet.</p>}
      <ul className="wallets">
        {wallets?.map((wallet) => (
          <li key={wallet.address} className="card wallet" data-address={wallet.address}>
            <div className="wallet-text">
              <h2>
                {wallet.chain === 'solana' ? 'Solana' : 'EVM'} wallet
                {wallet.watchOnly ? ' (watch-only)' : ''}
              </h2>
              <p className="network">{wallet.networkName}</p>
              <p className="address">
                <WalletLabel label={wallet.label} />
                <code>{wallet.address}</code>{' '}
                <CopyButton text={wallet.address} label={`Copy address ${wallet.address}`} />
              </p>
              <p>
                Balance:{' '}
                <strong data-testid="balance">
                  {wallet.balance === null ? 'unavailable' : `${wallet.balance} ${wallet.currency ?? ''}`}
                </strong>
              </p>
              {wallet.tokens === null ? (
                <p>Tokens: unavailable</p>
              ) : (
                wallet.tokens.length > 0 && (
                  <ul className="tokens" aria-label={`Tokens of ${wallet.address}`}>
                    {wallet.tokens.map((token) => (
                      <li key={token.address} data-testid="token-balance" title={token.address}>
                        <strong>
                          {formatTokenAmount(token.amount, token.decimals)}{' '}
                          {token.symbol ?? shorten(token.address, 4)}
                        </strong>{' '}
                        <span className="muted">({token.decimals} decimals)</span>
                      </li>
                    ))}
                  </ul>
                )
              )}
              <WalletLabelEditor
                address={wallet.address}
                label={wallet.label}
                onSaved={(label) => labelled(wallet.address, label)}
              />
              {wallet.faucet && (
                <div className="actions">
                  <button
                    type="button"
                    className="secondary"
                    disabled={busy !== undefined}
                    onClick={() => fund(wallet)}
                  >
                    Fund from faucet
                  </button>
                  {wallet.faucetTokens.map((token) => (
                    <button
                      key={token}
                      type="button"
                      className="secondary"
                      disabled={busy !== undefined}
                      onClick={() => fundToken(wallet, token)}
                    >
                      Faucet {token}
                    </button>
                  ))}
                </div>
              )}
            </div>
            <QrCode text={wallet.address} label={`QR code of ${wallet.address}`} />
          </li>
        ))}
      </ul>
    </section>
  );
}
