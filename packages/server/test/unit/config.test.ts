import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { DEFAULT_PLAN_ACCESS } from '../../src/domain/plan-access.ts';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8402);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.dataDir, resolve('data'));
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.redisUrl, undefined);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.bodyLimitBytes, 65_536);
    assert.equal(config.planAccess, DEFAULT_PLAN_ACCESS);
    assert.equal(config.demoAccount, true);
    assert.equal(config.eventRetentionDays, 30);
  });

  it('keeps events at least a day', () => {
    assert.equal(loadConfig({ EVENT_RETENTION_DAYS: '1' }).eventRetentionDays, 1);
    assert.throws(() => loadConfig({ EVENT_RETENTION_DAYS: '0' }), ConfigError);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATA_DIR: '/var/lib/gate402',
      DATABASE_URL: 'postgres://u:p@db:5432/gate402',
      REDIS_URL: 'redis://cache:6379',
      LOG_LEVEL: 'debug',
      BODY_LIMIT_BYTES: '131072',
      GATE402_DEMO: 'yes',
    });
    assert.equal(config.port, 9000);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.dataDir, '/var/lib/gate402');
    assert.equal(config.databaseUrl, 'postgres://u:p@db:5432/gate402');
    assert.equal(config.redisUrl, 'redis://cache:6379');
    assert.equal(config.logLevel, 'debug');
    assert.equal(config.bodyLimitBytes, 131_072);
    assert.equal(config.demoAccount, true);
  });

  it('turns the demo account off by default on PostgreSQL', () => {
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://db/gate402' }).demoAccount, false);
  });

  it('reports every bad value at once, each with a clear message, and never echoes a URL', () => {
    try {
      loadConfig({
        PORT: '80a',
        LOG_LEVEL: 'loud',
        DATABASE_URL: 'mysql://root:secret@db/x',
        REDIS_URL: 'not a url',
        BODY_LIMIT_BYTES: '10',
        GATE402_DEMO: 'maybe',
        PLAN_ACCESS: '{"standard":["payments","teleport"]}',
      });
      assert.fail('expected a ConfigError');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'PORT: must be a whole number from 0 to 65535, got "80a"',
        'DATABASE_URL: must start with postgres:// or postgresql://',
        'REDIS_URL: must be a URL starting with redis:// or rediss://',
        'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
        'BODY_LIMIT_BYTES: must be a whole number from 1024 to 16777216, got "10"',
        'PLAN_ACCESS: plan "standard" names unknown features: teleport',
        'GATE402_DEMO: must be true or false, got "maybe"',
      ]);
      assert.ok(!error.message.includes('secret'));
    }
  });

  it('lays SEND_AMOUNT_BOUNDS over the default bounds of a send per asset, and names a bad entry', () => {
    assert.deepEqual(loadConfig({}).sendAmountBounds, {
      SOL: ['0.001', '100'],
      ETH: ['0.001', '100'],
      USDC: ['0.001', '100000'],
    });
    assert.deepEqual(
      loadConfig({ SEND_AMOUNT_BOUNDS: '{"USDC":["0.01",5000],"EURC":["1","10"]}' }).sendAmountBounds,
      {
        SOL: ['0.001', '100'],
        ETH: ['0.001', '100'],
        USDC: ['0.01', '5000'],
        EURC: ['1', '10'],
      },
    );
    for (const [raw, message] of [
      ['plenty', /SEND_AMOUNT_BOUNDS: must be a JSON object of asset → \[least, most\]/],
      ['{"USDC":["5","1"]}', /the bounds of "USDC" must be \[least, most\]/],
      ['{"USDC":"5"}', /the bounds of "USDC" must be \[least, most\]/],
      ['{"USDC":["-1","5"]}', /the bounds of "USDC" must be \[least, most\]/],
    ] as const) {
      assert.throws(() => loadConfig({ SEND_AMOUNT_BOUNDS: raw }), message);
    }
  });

  it('shows each amount table an example of its own kind when the value is not JSON', () => {
    try {
      loadConfig({ X402_FEE_BUDGET: 'plenty', X402_MIN_SETTLE_AMOUNT: 'tiny' });
      assert.fail('expected a ConfigError');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'X402_FEE_BUDGET: must be a JSON object of family or CAIP-2 id → amount, such as {"solana":"0.011"}',
        'X402_MIN_SETTLE_AMOUNT: must be a JSON object of token symbol or address → amount, such as {"USDC":"0.001"}',
      ]);
    }
  });

  it('reads several RPC URLs per network, in order, with per-call limits, and names each bad URL', () => {
    const config = loadConfig({
      SOLANA_RPC_URL: 'https://a.example/key1, https://b.example',
      SOLANA_WS_URL: 'wss://a.example/key1,wss://b.example',
      EVM_RPC_URLS:
        '{"eip155:8453":["https://base-a.example","https://base-b.example/k"],"eip155:10":"https://op-a.example,https://op-b.example"}',
      RPC_TIMEOUT_MS: '2500',
      RPC_DOWN_MS: '5000',
    });
    assert.deepEqual(config.solanaRpcUrls, ['https://a.example/key1', 'https://b.example']);
    assert.deepEqual(config.solanaWsUrls, ['wss://a.example/key1', 'wss://b.example']);
    assert.deepEqual(config.evmRpcUrls, [
      { id: 'eip155:8453', rpcUrls: ['https://base-a.example', 'https://base-b.example/k'] },
      { id: 'eip155:10', rpcUrls: ['https://op-a.example', 'https://op-b.example'] },
    ]);
    assert.equal(config.rpcTimeoutMs, 2_500);
    assert.equal(config.rpcDownMs, 5_000);
    const defaults = loadConfig({});
    assert.deepEqual(defaults.solanaRpcUrls, []);
    assert.deepEqual(defaults.solanaWsUrls, []);
    assert.equal(defaults.rpcTimeoutMs, 8_000);
    assert.equal(defaults.rpcDownMs, 2_000);

    try {
      loadConfig({
        SOLANA_RPC_URL: 'https://a.example/secret1,,https://b.example',
        SOLANA_WS_URL: 'wss://a.example/secret3,https://b.example',
        EVM_RPC_URLS: '{"eip155:8453":["https://ok.example","ftp://secret2@x"]}',
        RPC_TIMEOUT_MS: '5',
      });
      assert.fail('expected a ConfigError');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'SOLANA_RPC_URL: has an empty URL between commas',
        'SOLANA_WS_URL: URL 2 must start with ws:// or wss://',
        'EVM_RPC_URLS: URL 2 of eip155:8453 must start with http:// or https://',
        'RPC_TIMEOUT_MS: must be a whole number from 100 to 120000, got "5"',
      ]);
      assert.ok(!error.message.includes('secret'));
    }
  });
});
