import { type FormEvent, useCallback, useEffect, useId, useState } from 'react';
import { type ApiKey, api, type SpendPolicy } from '../api.ts';
import { ErrorMessage } from './error-message.tsx';

const EXAMPLE = `{
  "limits": [{ "network": "solana:localnet", "asset": "SOL", "maxPerPayment": "0.5", "maxPerDay": "2" }],
  "allowedRecipients": ["9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"],
  "allowedHosts": ["api.example.com"],
  "expiresAt": "2026-12-31T23:59:59Z"
}`;

/** What PUT takes back: the policy as shown, without what the gateway adds (scope, ids, decimals). */
function editable(policy: SpendPolicy): string {
  return JSON.stringify(
    {
      limits:
        policy.limits?.map((l) => ({
          network: l.network,
          asset: l.assetAddress ?? l.asset,
          maxPerPayment: l.maxPerPayment,
          maxPerDay: l.maxPerDay,
        })) ?? null,
      allowedRecipients: policy.allowedRecipients,
      allowedHosts: policy.allowedHosts,
      allowedNetworks: policy.allowedNetworks,
      expiresAt: policy.expiresAt,
    },
    null,
    2,
  );
}

/**
 * The spend policies of the account and of each key (docs/spend-policies.md), edited as the JSON that
 * PUT /spend-policies takes; the gateway checks every field and names the one that is wrong.
 */
export function SpendPolicyEditor({ keys }: { keys: readonly ApiKey[] }) {
  const [policies, setPolicies] = useState<SpendPolicy[]>([]);
  const [target, setTarget] = useState('account');
  const [text, setText] = useState('');
  const [saved, setSaved] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const targetId = useId();
  const textId = useId();

  const path =
    target === 'account' ? '/spend-policies/account' : `/spend-policies/keys/${encodeURIComponent(target)}`;
  const current = policies.find((p) => (target === 'account' ? p.scope === 'account' : p.keyId === target));

  const load = useCallback(
    () =>
      api<{ policies: SpendPolicy[] }>('GET', '/spend-policies').then(
        (r) => setPolicies(r.policies),
        setError,
      ),
    [],
  );
  useEffect(() => {
    load();
  }, [load]);
  // A reload after a save must not wipe the save's confirmation: only choosing another policy does.
  useEffect(() => {
    setText(current === undefined ? '' : editable(current));
  }, [current]);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setSaved(undefined);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      setError(new Error('The policy is not JSON.'));
      return;
    }
    try {
      await api('PUT', path, body);
      await load();
      setSaved('Policy saved.');
    } catch (caught) {
      setError(caught);
    }
  };

  const remove = async () => {
    setError(undefined);
    try {
      await api('DELETE', path);
      await load();
      setSaved('Policy removed.');
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <form className="card" onSubmit={save} aria-labelledby="spend-policies-title">
      <h2 id="spend-policies-title">Spend policies</h2>
      <p>
        Caps on what custodial payments may spend, enforced by the gateway: per payment and per 24 hours for
        each asset, allowed recipients, hosts and networks, an expiry. The account's policy binds every key; a
        key's binds that key on top.
      </p>
      <label htmlFor={targetId}>Policy of</label>
      <select
        id={targetId}
        value={target}
        onChange={(event) => {
          setTarget(event.target.value);
          setSaved(undefined);
        }}
      >
        <option value="account">the account (every key)</option>
        {keys.map((key) => (
          <option key={key.id} value={key.id}>
            key “{key.name}”
          </option>
        ))}
      </select>
      <label htmlFor={textId}>Policy (JSON)</label>
      <textarea
        id={textId}
        rows={10}
        spellCheck={false}
        placeholder={EXAMPLE}
        value={text}
        onChange={(event) => setText(event.target.value)}
      />
      <p>
        {current === undefined
          ? 'No policy set: every payment is allowed.'
          : `Set; last changed ${new Date(current.updatedAt).toISOString()}.`}
      </p>
      <button type="submit">Save policy</button>{' '}
      {current !== undefined && (
        <button type="button" onClick={remove}>
          Remove policy
        </button>
      )}
      {saved !== undefined && <p role="status">{saved}</p>}
      <ErrorMessage error={error} />
    </form>
  );
}
