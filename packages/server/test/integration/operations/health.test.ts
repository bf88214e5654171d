import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildApp } from '../../../src/app.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { loadConfig } from '../../../src/config.ts';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.ts';
import { createServices } from '../../../src/services/gateway-services.ts';
import { openStore } from '../../../src/store/open-store.ts';
import { startTestGateway } from '../../support/test-gateway.ts';

describe('health probes', () => {
  it('reports alive and ready when storage answers', async () => {
    const gw = await startTestGateway();
    try {
      const alive = await gw.app.inject({ method: 'GET', url: '/healthz' });
      assert.deepEqual(alive.json(), { status: 'ok' });
      const ready = await gw.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 200);
      assert.equal(ready.json().status, 'ready');
      assert.equal(ready.json().checks.storage.ok, true);
    } finally {
      await gw.close();
    }
  });

  it('answers 503 naming the failed dependency, without leaking its credentials', async () => {
    const { store } = await openStore({ kind: 'sqlite', file: ':memory:' });
    const app = await buildApp({
      config: loadConfig({}),
      store,
      services: createServices({
        store,
        networks: new NetworkRegistry([]),
        masterKey: new Uint8Array(32),
        instanceId: 'test',
        confirmTimeoutMs: 1_000,
        proofMaxAgeMs: 1_000,
      }),
      rateLimiter: new MemoryRateLimiter(),
      networks: new NetworkRegistry([]),
      readiness: [
        { name: 'storage', check: () => store.ping() },
        {
          name: 'redis',
          check: async () => {
            throw new Error('connect ECONNREFUSED redis://gate:s3cret@10.0.0.9:6379');
          },
        },
        { name: 'solana', check: () => new Promise(() => {}) },
      ],
    });
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(res.statusCode, 503);
      const body = res.json();
      assert.equal(body.status, 'unavailable');
      assert.equal(body.checks.storage.ok, true);
      assert.equal(body.checks.redis.ok, false);
      assert.equal(body.checks.redis.error, 'connect ECONNREFUSED redis://***@10.0.0.9:6379');
      assert.equal(body.checks.solana.error, 'no answer within 2000 ms');
    } finally {
      await app.close();
      await store.close();
    }
  });
});
