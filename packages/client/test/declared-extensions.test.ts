import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { declareDiscoveryExtension } from '@x402/extensions/bazaar';
import { declaredExtensions } from '../src/declared-extensions.ts';

type Declared = { bazaar: { info: { input: Record<string, unknown> } } };

describe('protect(): the extensions its 402 declares', () => {
  it('states GET for a stock query declaration, POST for one with a body, and keeps a stated method', () => {
    const query = declaredExtensions(declareDiscoveryExtension({ input: { q: 'x' } })) as Declared;
    assert.equal(query.bazaar.info.input.method, 'GET');
    const body = declaredExtensions(
      declareDiscoveryExtension({ bodyType: 'json', input: { q: 'x' } }),
    ) as Declared;
    assert.equal(body.bazaar.info.input.method, 'POST');
    const stated = declareDiscoveryExtension({ input: { q: 'x' } }) as unknown as Declared;
    stated.bazaar.info.input.method = 'DELETE';
    assert.equal((declaredExtensions(stated) as Declared).bazaar.info.input.method, 'DELETE');
  });

  it('leaves MCP declarations, other extensions and what is not a declaration as they are, without changing its input', () => {
    const mcp = declareDiscoveryExtension({ toolName: 't', inputSchema: { type: 'object' } });
    assert.deepEqual(declaredExtensions(mcp), mcp);
    const given = { 'payment-identifier': { info: { required: false } }, bazaar: 'not one' };
    assert.deepEqual(declaredExtensions(given), given);
    const original = declareDiscoveryExtension({ input: { q: 'x' } }) as unknown as Declared;
    declaredExtensions(original);
    assert.equal(original.bazaar.info.input.method, undefined);
  });
});
