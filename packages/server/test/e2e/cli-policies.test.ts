import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { SQLITE_FILE_NAME } from '../../src/store/open-store.ts';
import { tempDir } from '../support/databases.ts';
import { gate402Json } from '../support/gate402-cli.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';
import { bearer, startTestGateway, type TestGateway } from '../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../support/test-localnet.ts';

/**
 * The operator's way to spend policies: `gate402 keys create --admin` on the gateway's storage, then
 * `gate402 policies` through the running gateway's API with that key; an ordinary key is refused.
 */
describe('gate402 keys create --admin and gate402 policies', () => {
  const dir = tempDir();
  let chain: TestChain;
  let gw: TestGateway;
  let url: string;
  let accountId: string;
  let admin: string;
  let agent: { id: string; key: string };

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter]),
      storage: {
        location: { kind: 'sqlite', file: join(dir.path, SQLITE_FILE_NAME) },
        dispose: async () => {},
      },
    });
    url = await gw.gateway.listen();
    const account = gate402Json(dir.path, ['accounts', 'create', '--name', 'ops', '--plan', 'standard']);
    assert.equal(account.code, 0, account.stderr);
    accountId = account.json.id;
    const created = gate402Json(dir.path, [
      'keys',
      'create',
      '--account',
      accountId,
      '--name',
      'root',
      '--admin',
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual(created.json.scopes, ['admin']);
    admin = created.json.key;
    const plain = gate402Json(dir.path, ['keys', 'create', '--account', accountId, '--name', 'agent']);
    assert.deepEqual(plain.json.scopes, []);
    agent = { id: plain.json.id, key: plain.json.key };
  });
  after(async () => {
    await gw.close();
    await chain.close();
    dir.dispose();
  });

  /**
   * `gate402 policies … --json`, run without blocking: the gateway it calls answers from this process
   * (gate402Json's spawnSync would hold the event loop, and with it the gateway, until it timed out).
   */
  const policies = (key: string | undefined, args: string[]) =>
    new Promise<{ code: number | null; json: ReturnType<typeof JSON.parse>; stderr: string }>((resolve) => {
      const { DATABASE_URL: _d, REDIS_URL: _r, GATE402_API_KEY: _k, ...inherited } = process.env;
      execFile(
        process.execPath,
        [...GATE402_COMMAND, 'policies', ...args, '--url', url, '--json'],
        {
          env: {
            ...inherited,
            DATA_DIR: dir.path,
            LOG_LEVEL: 'warn',
            ...(key === undefined ? {} : { GATE402_API_KEY: key }),
          },
          encoding: 'utf8',
          timeout: 30_000,
        },
        (error, stdout, stderr) =>
          resolve({
            code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
            json: stdout === '' ? undefined : JSON.parse(stdout),
            stderr,
          }),
      );
    });

  it("sets, shows, lists and clears a key's policy with the admin key, exactly as the API takes it", async () => {
    const network = chain.adapter.info.id;
    const policy = {
      limits: [{ network, asset: 'sol', maxPerPayment: '0.5', maxPerDay: '2' }],
      allowedHosts: ['API.example.com'],
    };
    const set = await policies(admin, ['set', '--key-id', agent.id, '--policy', JSON.stringify(policy)]);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.json.scope, 'key');
    assert.deepEqual(set.json.limits, [
      { network, asset: 'SOL', assetAddress: null, decimals: 9, maxPerPayment: '0.5', maxPerDay: '2' },
    ]);
    assert.deepEqual(set.json.allowedHosts, ['api.example.com']);
    assert.deepEqual((await policies(admin, ['show', '--key-id', agent.id])).json, set.json);
    assert.deepEqual((await policies(admin, ['list'])).json, [set.json]);
    // The agent reads what binds it, through the API.
    const own = await gw.app.inject({ method: 'GET', url: '/spend-policy', headers: bearer(agent.key) });
    assert.equal(own.json().policies[0].limits[0].maxPerDay, '2');
    assert.equal((await policies(admin, ['clear', '--key-id', agent.id])).code, 0);
    const gone = await policies(admin, ['show', '--key-id', agent.id]);
    assert.equal(gone.code, 1);
    assert.equal(gone.json.error.code, 'NOT_FOUND');
  });

  it('refuses an ordinary key, a bad policy (naming the field) and a missing key', async () => {
    const forbidden = await policies(agent.key, ['set', '--policy', '{"limits":[]}']);
    assert.equal(forbidden.code, 1);
    assert.equal(forbidden.json.error.code, 'FORBIDDEN');
    const bad = await policies(admin, ['set', '--policy', '{"expiresAt":"soon"}']);
    assert.equal(bad.code, 1);
    assert.equal(bad.json.error.code, 'INVALID_PARAMETERS');
    assert.ok('expiresAt' in bad.json.error.details, JSON.stringify(bad.json));
    const none = await policies(undefined, ['list']);
    assert.equal(none.code, 2);
  });
});
