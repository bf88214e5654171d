import assert from 'node:assert/strict';
import { it } from 'node:test';
import { shareableUrl } from '../../src/domain/shareable-url.ts';

it('shares only a bare scheme://host[:port] URL', () => {
  for (const [url, shown] of [
    ['https://api.mainnet-beta.solana.com', 'https://api.mainnet-beta.solana.com'],
    ['https://mainnet.base.org/', 'https://mainnet.base.org/'],
    ['http://127.0.0.1:8899', 'http://127.0.0.1:8899'],
    ['ws://127.0.0.1:8900', 'ws://127.0.0.1:8900'],
    ['https://mainnet.infura.io/v3/0123456789abcdef', null],
    ['https://base-mainnet.g.alchemy.com/v2/key', null],
    ['https://rpc.example.com/?api-key=key', null],
    ['https://key:x@rpc.example.com', null],
    ['https://user@rpc.example.com', null],
    ['https://rpc.example.com/#key', null],
    ['not a url', null],
  ] as const) {
    assert.equal(shareableUrl(url), shown, url);
  }
});
