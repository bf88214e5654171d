import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from './support/databases.ts';

const BIN = fileURLToPath(new URL('../bin/gate402.js', import.meta.url));

describe('gate402 webhooks', () => {
  const dir = tempDir();
  after(() => dir.dispose());

  const run = (args: string[], extra: Record<string, string> = {}) => {
    const { DATABASE_URL: _d, REDIS_URL: _r, ...env } = process.env;
    const result = spawnSync(process.execPath, [BIN, ...args, '--json'], {
      env: { ...env, DATA_DIR: dir.path, LOG_LEVEL: 'warn', ...extra },
      encoding: 'utf8',
      timeout: 30_000,
    });
    return {
      code: result.status,
      json: result.stdout === '' ? undefined : JSON.parse(result.stdout),
      stderr: result.stderr,
    };
  };

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
