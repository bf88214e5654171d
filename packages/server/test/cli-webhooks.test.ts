import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { tempDir } from './support/databases.ts';
import { gate402Json } from './support/gate402-cli.ts';

describe('gate402 webhooks', () => {
  const dir = tempDir();
  after(() => dir.dispose());

  const run = (args: string[], extra: Record<string, string> = {}) => gate402Json(dir.path, args, extra);

  it('creates, lists and deletes an endpoint with the API’s rules', () => {
    const account = run(['accounts', 'create', '--name', 'hooks', '--plan', 'premium']).json;
    const local = { ALLOW_PRIVATE_OUTBOUND_URLS: 'true' };
    const created = run(
      [
        'webhooks',
        'create',
        '--account',
        account.id,
        '--url',
        'http://127.0.0.1:9/h',
        '--events',
        'payment.confirmed,payment.failed',
      ],
      local,
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.json.id, /^whk_/);
    assert.match(created.json.secret, /^whsec_/);
    assert.deepEqual(created.json.eventTypes, ['payment.confirmed', 'payment.failed']);

    const listed = run(['webhooks', 'list', '--account', account.id]);
    assert.deepEqual(listed.json, [
      {
        id: created.json.id,
        url: 'http://127.0.0.1:9/h',
        eventTypes: ['payment.confirmed', 'payment.failed'],
        createdAt: created.json.createdAt,
      },
    ]);

    // Without the setting, a loopback URL is refused, as on POST /webhooks.
    const refused = run(['webhooks', 'create', '--account', account.id, '--url', 'https://127.0.0.1/h']);
    assert.equal(refused.code, 1);
    assert.deepEqual(refused.json.error.details, {
      url: 'must not point at a private, loopback or link-local address',
    });

    const deleted = run(['webhooks', 'delete', created.json.id, '--account', account.id]);
    assert.deepEqual(deleted.json, { id: created.json.id, deleted: true });
    assert.deepEqual(run(['webhooks', 'list', '--account', account.id]).json, []);
    const again = run(['webhooks', 'delete', created.json.id, '--account', account.id]);
    assert.equal(again.code, 1);
    assert.equal(again.json.error.code, 'NOT_FOUND');
  });
});
