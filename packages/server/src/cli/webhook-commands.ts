import { parseArgs } from 'node:util';
import { WebhookService, type WebhookView } from '../events/webhooks/webhook-service.ts';
import { loadMasterKey } from '../services/custody/master-key.ts';
import { SecretBox } from '../services/custody/secret-box.ts';
import { openStore, storageLocation } from '../store/open-store.ts';
import { type CliContext, requiredFlag, UsageError, unknownSubcommand } from './cli-context.ts';

export const FLAGS = {
  account: { type: 'string' },
  url: { type: 'string' },
  events: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * Webhook endpoints from the command line, with the same rules as POST/GET/PATCH/DELETE /webhooks (the
 * SSRF guard included). A running server picks a new endpoint, or one enabled again, up with the next
 * event.
 */
export async function webhooksCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({ args: rest, options: FLAGS, allowPositionals: true });
  const accountId = requiredFlag(values, 'account');
  const { store } = await openStore(storageLocation(ctx.config));
  try {
    await ctx.accountsExist(store, accountId);
    const masterKey = loadMasterKey(ctx.config, (message) => process.stderr.write(`gate402: ${message}\n`));
    const webhooks = new WebhookService(store, new SecretBox(masterKey), {
      allowPrivate: ctx.config.allowPrivateOutboundUrls,
      ports: ctx.config.outboundPorts,
    });
    switch (sub) {
      case 'create': {
        const eventTypes =
          values.events === undefined
            ? []
            : values.events
                .split(',')
                .map((t) => t.trim())
                .filter((t) => t !== '');
        const created = await webhooks.create(accountId, { url: requiredFlag(values, 'url'), eventTypes });
        ctx.result(
          created,
          `created webhook ${created.id} → ${created.url}\nsigning secret (shown once): ${created.secret}`,
        );
        return;
      }
      case 'list': {
        const list = await webhooks.list(accountId);
        ctx.result(
          list,
          list.length === 0
            ? 'no webhooks'
            : list
                .map(
                  (w) =>
                    `${w.id}  ${w.url}  ${w.eventTypes.length === 0 ? 'all events' : w.eventTypes.join(',')}  ${state(w)}`,
                )
                .join('\n'),
        );
        return;
      }
      case 'delete': {
        const [id] = positionals;
        if (id === undefined) throw new UsageError('webhooks delete needs the webhook id');
        await webhooks.delete(accountId, id);
        ctx.result({ id, deleted: true }, `deleted webhook ${id}`);
        return;
      }
      case 'enable':
      case 'disable': {
        const [id] = positionals;
        if (id === undefined) throw new UsageError(`webhooks ${sub} needs the webhook id`);
        const updated = await webhooks.update(accountId, id, { enabled: sub === 'enable' });
        ctx.result(updated, `webhook ${id} ${state(updated)}`);
        return;
      }
      default:
        throw unknownSubcommand('webhooks', sub, ['create', 'list', 'delete', 'enable', 'disable']);
    }
  } finally {
    await store.close();
  }
}

function state(webhook: WebhookView): string {
  return webhook.enabled
    ? 'enabled'
    : `disabled since ${new Date(webhook.disabledAt ?? 0).toISOString()}: ${webhook.disabledReason}`;
}
