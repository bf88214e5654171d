import { type FormEvent, useId, useState } from 'react';
import { api } from '../api.ts';
import { CopyButton } from './copy-button.tsx';
import { ErrorMessage } from './error-message.tsx';

interface Challenge {
  challenge: string;
  chain: 'solana' | 'evm';
  address: string;
  expiresAt: number;
}

/**
 * Registers an address whose key you keep as a watch-only wallet, on proof of control: step 1 asks the
 * gateway for a challenge, which the page shows; the person signs it in their own wallet (the key never
 * comes near the page) and step 2 sends the signature back.
 */
export function WatchAddressForm({ onRegistered }: { onRegistered: () => Promise<unknown> }) {
  const ids = useId();
  const [chain, setChain] = useState<'solana' | 'evm'>('solana');
  const [address, setAddress] = useState('');
  const [issued, setIssued] = useState<Challenge>();
  const [signature, setSignature] = useState('');
  const [error, setError] = useState<unknown>();
  const [status, setStatus] = useState('');

  const ask = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setStatus('');
    try {
      setIssued(await api<Challenge>('POST', '/wallets/challenge', { chain, address: address.trim() }));
      setSignature('');
    } catch (caught) {
      setError(caught);
    }
  };

  const register = async (event: FormEvent) => {
    event.preventDefault();
    if (issued === undefined) return;
    setError(undefined);
    try {
      await api('POST', '/wallets', {
        chain: issued.chain,
        address: issued.address,
        watchOnly: true,
        challenge: issued.challenge,
        signature: signature.trim(),
      });
      setStatus(`Watching ${issued.address}.`);
      setIssued(undefined);
      setAddress('');
      await onRegistered();
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <div className="card">
      <h2>Watch an address you control</h2>
      <p>
        A watch-only wallet receives payments to an address whose key you keep. Prove you control it: ask for
        a challenge, sign it in your wallet (Solana: “Sign message”; EVM: personal_sign) and paste the
        signature.
      </p>
      <form onSubmit={ask} aria-label="Ask for a challenge">
        <label htmlFor={`${ids}-chain`}>Chain</label>
        <select
          id={`${ids}-chain`}
          value={chain}
          onChange={(event) => setChain(event.target.value as 'solana' | 'evm')}
        >
          <option value="solana">Solana</option>
          <option value="evm">EVM</option>
        </select>
        <label htmlFor={`${ids}-address`}>Address</label>
        <input
          id={`${ids}-address`}
          required
          spellCheck={false}
          autoComplete="off"
          value={address}
          onChange={(event) => setAddress(event.target.value)}
        />
        <button type="submit">Get challenge</button>
      </form>
      {issued && (
        <form onSubmit={register} aria-label="Register with the signature">
          <label htmlFor={`${ids}-challenge`}>
            Challenge to sign with {issued.address} (valid until{' '}
            {new Date(issued.expiresAt).toLocaleTimeString()}, once)
          </label>
          <textarea id={`${ids}-challenge`} readOnly rows={10} value={issued.challenge} />
          <CopyButton text={issued.challenge} label="Copy the challenge" />
          <label htmlFor={`${ids}-signature`}>
            Signature ({issued.chain === 'solana' ? 'base58, base64 or hex' : '0x…'})
          </label>
          <input
            id={`${ids}-signature`}
            required
            spellCheck={false}
            autoComplete="off"
            value={signature}
            onChange={(event) => setSignature(event.target.value)}
          />
          <button type="submit">Register watch-only wallet</button>
        </form>
      )}
      <ErrorMessage error={error} />
      <p className="status" aria-live="polite">
        {status}
      </p>
    </div>
  );
}
