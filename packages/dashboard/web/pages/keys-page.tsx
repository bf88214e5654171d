import { type FormEvent, useCallback, useEffect, useId, useState } from 'react';
import { type ApiKey, api } from '../api.ts';
import { ConfirmDeleteButton } from '../components/confirm-delete-button.tsx';
import { ErrorMessage } from '../components/error-message.tsx';
import { formatTime } from '../components/format.ts';
import { ShownOnceSecret } from '../components/shown-once-secret.tsx';
import { SpendPolicyEditor } from '../components/spend-policy-editor.tsx';

/** Spec §2.6 and §5: keys are generated, listed and deleted here; rotation is create, switch, delete. */
export function KeysPage() {
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [name, setName] = useState('');
  const [admin, setAdmin] = useState(false);
  const [created, setCreated] = useState<(ApiKey & { key: string }) | undefined>();
  const [error, setError] = useState<unknown>();
  const nameId = useId();
  const adminId = useId();

  const load = useCallback(
    () => api<{ keys: ApiKey[] }>('GET', '/keys').then((r) => setKeys(r.keys), setError),
    [],
  );
  useEffect(() => {
    load();
  }, [load]);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    try {
      setCreated(await api<ApiKey & { key: string }>('POST', '/keys', { name, admin }));
      setName('');
      setAdmin(false);
      await load();
    } catch (caught) {
      setError(caught);
    }
  };

  const remove = async (key: ApiKey) => {
    setError(undefined);
    try {
      await api('DELETE', `/keys/${encodeURIComponent(key.id)}`);
      if (created?.id === key.id) setCreated(undefined);
      await load();
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API Keys</h1>
      <div className="columns">
        <div>
          <form className="card inline-form" onSubmit={create}>
            <h2>Generate a key</h2>
            <label htmlFor={nameId}>Key name</label>
            <input
              id={nameId}
              required
              maxLength={100}
              placeholder="e.g. production server"
              value={name}
              onChange={(event) => setName(event.target.value)}
            />
            <label htmlFor={adminId} className="checkbox">
              <input
                id={adminId}
                type="checkbox"
                checked={admin}
                onChange={(event) => setAdmin(event.target.checked)}
              />{' '}
              Admin: may set spend policies (not for agents)
            </label>
            <button type="submit">Generate key</button>
          </form>
          <ErrorMessage error={error} />
          {created && (
            <ShownOnceSecret
              title={`New key “${created.name}”`}
              advice="Keep it on your server; never put it in browser code, mobile apps or a repository."
              secret={created.key}
              copyLabel="Copy the new API key"
              testId="new-key"
              onDismiss={() => setCreated(undefined)}
            />
          )}
          <div className="table-wrap">
            <table>
              <caption>Active keys</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Prefix</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Scope</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.length === 0 && (
                  <tr>
                    <td colSpan={6}>No keys yet.</td>
                  </tr>
                )}
                {keys.map((key) => (
                  <tr key={key.id} data-key-id={key.id}>
                    <td>{key.name}</td>
                    <td>
                      <code>{key.prefix}…</code>
                    </td>
                    <td>{formatTime(key.createdAt)}</td>
                    <td>{formatTime(key.lastUsedAt)}</td>
                    <td>{key.scopes.includes('admin') ? 'admin' : '—'}</td>
                    <td>
                      <ConfirmDeleteButton
                        question={`Delete key “${key.name}”? Requests with it will get 401.`}
                        onDelete={() => remove(key)}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <SpendPolicyEditor keys={keys} />
        </div>
        <aside className="card guide" aria-labelledby="rotation-title">
          <h2 id="rotation-title">Rotating a key</h2>
          <ol>
            <li>Generate a new key here.</li>
            <li>Switch your application to it and deploy.</li>
            <li>Check “Last used” on the old key stops moving, then delete it.</li>
          </ol>
          <p>
            Send the key as <code>Authorization: Bearer &lt;key&gt;</code>, from server-side code only.
          </p>
        </aside>
      </div>
    </section>
  );
}
