import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { tempDir } from '../support/databases.ts';
import { gate402Json, gate402Text } from '../support/gate402-cli.ts';

describe('gate402 webhooks', () => {
  const dir = tempDir();
  after(() => dir.dispose());

  const run = (args: string[], extra: Record<string, string> = {}) => gate402Json(dir.path, args, extra);

  it('creates, lists, disables, enables and deletes an endpoint with the API’s rules', () => {
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
        enabled: true,
        disabledAt: null,
        disabledReason: null,
      },
    ]);

    // Disabled (by hand here; an endpoint answering 410 Gone is disabled the same way) and enabled again.
    const disabled = run(['webhooks', 'disable', created.json.id, '--account', account.id]);
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.equal(disabled.json.enabled, false);
    assert.equal(disabled.json.disabledReason, 'disabled by its account');
    const text = gate402Text(dir.path, ['webhooks', 'list', '--account', account.id]);
    assert.equal(
      text.stdout.trim(),
      `${created.json.id}  http://127.0.0.1:9/h  payment.confirmed,payment.failed  disabled since ${new Date(disabled.json.disabledAt).toISOString()}: disabled by its account`,
    );
    const enabled = run(['webhooks', 'enable', created.json.id, '--account', account.id]);
    assert.deepEqual(enabled.json, listed.json[0]);
    assert.match(
      gate402Text(dir.path, ['webhooks', 'list', '--account', account.id]).stdout,
      / payment\.confirmed,payment\.failed {2}enabled\n$/,
    );
    const noId = run(['webhooks', 'enable', '--account', account.id]);
    assert.equal(noId.code, 2, noId.stderr);

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
