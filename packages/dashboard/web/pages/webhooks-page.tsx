import { type FormEvent, useCallback, useEffect, useId, useState } from 'react';
import { ApiError, api, type Delivery, type Webhook } from '../api.ts';
import { ConfirmDeleteButton } from '../components/confirm-delete-button.tsx';
import { ErrorMessage } from '../components/error-message.tsx';
import { formatTime } from '../components/format.ts';
import { ShownOnceSecret } from '../components/shown-once-secret.tsx';

/**
 * Webhook endpoints, the signing secret shown once, disabling and enabling (an endpoint that answered
 * 410 Gone is disabled, with its reason), the delivery log and redelivery.
 */
export function WebhooksPage() {
  const [webhooks, setWebhooks] = useState<Webhook[]>();
  const [eventTypes, setEventTypes] = useState<string[]>([]);
  const [url, setUrl] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [created, setCreated] = useState<(Webhook & { secret: string }) | undefined>();
  const [open, setOpen] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const urlId = useId();

  const load = useCallback(
    () =>
      api<{ webhooks: Webhook[]; eventTypes: string[] }>('GET', '/webhooks').then((r) => {
        setWebhooks(r.webhooks);
        setEventTypes(r.eventTypes);
      }, setError),
    [],
  );
  useEffect(() => {
    load();
  }, [load]);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    try {
      setCreated(await api<Webhook & { secret: string }>('POST', '/webhooks', { url, eventTypes: chosen }));
      setUrl('');
      setChosen([]);
      await load();
    } catch (caught) {
      setError(caught);
    }
  };

  const setEnabled = async (webhook: Webhook, enabled: boolean) => {
    setError(undefined);
    try {
      await api('PATCH', `/webhooks/${encodeURIComponent(webhook.id)}`, { enabled });
      await load();
    } catch (caught) {
      setError(caught);
    }
  };

  const remove = async (webhook: Webhook) => {
    try {
      await api('DELETE', `/webhooks/${encodeURIComponent(webhook.id)}`);
      if (created?.id === webhook.id) setCreated(undefined);
      await load();
    } catch (caught) {
      setError(caught);
    }
  };

  if (error instanceof ApiError && error.status === 404 && webhooks === undefined) {
    return (
      <section>
        <h1>Webhooks</h1>
        <p>This gateway runs without payment events, so webhooks are not available.</p>
      </section>
    );
  }

  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <form className="card" onSubmit={create}>
        <h2>Add an endpoint</h2>
        <label htmlFor={urlId}>Endpoint URL</label>
        <input
          id={urlId}
          type="url"
          required
          placeholder="https://example.com/gate402-events"
          value={url}
          onChange={(event) => setUrl(event.target.value)}
        />
        <fieldset>
          <legend>Events (none chosen: every event)</legend>
          {eventTypes.map((type) => (
            <label key={type} className="checkbox">
              <input
                type="checkbox"
                checked={chosen.includes(type)}
                onChange={(event) =>
                  setChosen(event.target.checked ? [...chosen, type] : chosen.filter((t) => t !== type))
                }
              />{' '}
              {type}
            </label>
          ))}
        </fieldset>
        <button type="submit">Add endpoint</button>
      </form>
      <ErrorMessage error={error} />
      {created && (
        <ShownOnceSecret
          title={`Signing secret of ${created.url}`}
          advice="Use it to check the webhook-signature header of each delivery (Standard Webhooks)."
          secret={created.secret}
          copyLabel="Copy the signing secret"
          testId="webhook-secret"
          onDismiss={() => setCreated(undefined)}
        />
      )}
      {webhooks?.length === 0 && <p>No endpoints yet.</p>}
      <ul className="webhooks">
        {webhooks?.map((webhook) => (
          <li key={webhook.id} className="card">
            <h2>
              <code>{webhook.url}</code>{' '}
              <span className="status-badge">{webhook.enabled ? 'enabled' : 'disabled'}</span>
            </h2>
            <p>
              {webhook.eventTypes.length === 0 ? 'Every event' : webhook.eventTypes.join(', ')} · added{' '}
              {formatTime(webhook.createdAt)}
            </p>
            {!webhook.enabled && (
              <p className="warning" data-testid="webhook-disabled">
                Disabled {formatTime(webhook.disabledAt)}: {webhook.disabledReason}. Nothing is sent to it;
                enabled again, it receives the events from then on, none from while it was disabled.
              </p>
            )}
            <div className="actions">
              <button
                type="button"
                className="secondary small"
                onClick={() => setEnabled(webhook, !webhook.enabled)}
              >
                {webhook.enabled ? 'Disable' : 'Enable'}
              </button>
              <button
                type="button"
                className="secondary small"
                aria-expanded={open === webhook.id}
                onClick={() => setOpen(open === webhook.id ? undefined : webhook.id)}
              >
                {open === webhook.id ? 'Hide deliveries' : 'Show deliveries'}
              </button>
              <ConfirmDeleteButton
                question={`Delete the endpoint ${webhook.url}?`}
                onDelete={() => remove(webhook)}
              />
            </div>
            {open === webhook.id && <DeliveryLog webhookId={webhook.id} />}
          </li>
        ))}
      </ul>
    </section>
  );
}

function DeliveryLog({ webhookId }: { webhookId: string }) {
  const [deliveries, setDeliveries] = useState<Delivery[]>();
  const [error, setError] = useState<unknown>();
  const load = useCallback(
    () =>
      api<{ deliveries: Delivery[] }>('GET', `/webhooks/${encodeURIComponent(webhookId)}/deliveries`).then(
        (r) => setDeliveries(r.deliveries),
        setError,
      ),
    [webhookId],
  );
  useEffect(() => {
    load();
  }, [load]);

  const redeliver = async (delivery: Delivery) => {
    try {
      await api(
        'POST',
        `/webhooks/${encodeURIComponent(webhookId)}/deliveries/${encodeURIComponent(delivery.id)}/redeliver`,
      );
      await load();
    } catch (caught) {
      setError(caught);
    }
  };

  return (
    <div className="table-wrap">
      <ErrorMessage error={error} />
      <table>
        <caption>Delivery log (newest first)</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last answer</th>
            <th scope="col">Last attempt</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {deliveries?.length === 0 && (
            <tr>
              <td colSpan={6}>No deliveries yet.</td>
            </tr>
          )}
          {deliveries?.map((d) => (
            <tr key={d.id}>
              <td>
                <code>{d.eventId}</code>
              </td>
              <td>
                <span className="status-badge">{d.status}</span>
              </td>
              <td>{d.attempts}</td>
              <td>{d.lastStatusCode ?? d.lastError ?? '—'}</td>
              <td>{formatTime(d.lastAttemptAt)}</td>
              <td>
                <button type="button" className="secondary small" onClick={() => redeliver(d)}>
                  Redeliver
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
