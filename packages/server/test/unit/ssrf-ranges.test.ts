import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkOutboundUrl,
  isForbiddenAddress,
  OutboundUrlError,
  resolveOutbound,
} from '../../src/outbound/ssrf-guard.ts';

const STRICT = { allowPrivate: false };

/** One address inside each block of the IANA IPv4 and IPv6 Special-Purpose Address Registries. */
const SPECIAL_PURPOSE = [
  '0.1.2.3',
  '10.1.1.1',
  '100.64.0.1',
  '127.0.0.2',
  '169.254.169.254',
  '172.16.0.1',
  '192.0.0.9',
  '192.0.0.170',
  '192.0.2.1',
  '192.31.196.1',
  '192.52.193.1',
  '192.88.99.1',
  '192.168.1.1',
  '192.175.48.1',
  '198.18.0.1',
  '198.51.100.1',
  '203.0.113.1',
  '224.0.0.1',
  '240.0.0.1',
  '255.255.255.255',
  '::1',
  '::',
  '::ffff:127.0.0.1',
  '64:ff9b::7f00:1',
  '64:ff9b::808:808', // even a public IPv4 behind the well-known NAT64 prefix: the translator decides
  '64:ff9b:1::7f00:1',
  '64:ff9b:1:ffff::1',
  '100::1',
  '100:0:0:1::1',
  '2001::1',
  '2001:2::1',
  '2001:db8::1',
  '2002:7f00:1::',
  '2620:4f:8000::1',
  '3fff::1',
  '5f00::1',
  'fc00::1',
  'fd12::1',
  'fe80::1',
  'fec0::1',
  'feff::1',
  'ff02::1',
];

describe('SSRF guard: special-purpose ranges, one answer, two ports', () => {
  it('refuses an address in every special-purpose block', () => {
    for (const address of SPECIAL_PURPOSE) assert.ok(isForbiddenAddress(address), address);
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::6810:84e5', '2a00:1450:4001::200e']) {
      assert.ok(!isForbiddenAddress(address), address);
    }
  });

  it('refuses webhook URLs at the local-use NAT64 and site-local addresses the issue found accepted', () => {
    for (const url of ['https://[64:ff9b:1::7f00:1]/', 'https://[fec0::1]/']) {
      assert.throws(() => checkOutboundUrl(url, STRICT), OutboundUrlError, url);
    }
  });

  it('answers an unresolvable name exactly as a private one', async () => {
    const answers: string[] = [];
    for (const resolve of [
      async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      },
      async () => [],
      async () => [{ address: '10.0.0.8', family: 4 }],
      async () => [{ address: 'fec0::8', family: 6 }],
    ]) {
      const error = await resolveOutbound('https://internal.example/hook', STRICT, resolve).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof OutboundUrlError);
      answers.push(error.reason);
    }
    assert.equal(new Set(answers).size, 1, JSON.stringify(answers));
    assert.ok(!answers[0]?.includes('internal.example'), 'the answer does not echo the name');
  });

  it('allows ports 443 and 80 only, unless configured otherwise', () => {
    assert.equal(checkOutboundUrl('https://example.com/h', STRICT).hostname, 'example.com');
    assert.equal(checkOutboundUrl('https://example.com:443/h', STRICT).hostname, 'example.com');
    assert.equal(checkOutboundUrl('https://example.com:80/h', STRICT).port, '80');
    for (const url of [
      'https://example.com:8443/h',
      'https://example.com:6379/',
      'https://example.com:22/',
    ]) {
      assert.throws(() => checkOutboundUrl(url, STRICT), /must use port 443 or 80/, url);
    }
    assert.throws(() => checkOutboundUrl('http://example.com/h', STRICT), /https/);
    assert.equal(
      checkOutboundUrl('https://example.com:8443/h', { allowPrivate: false, ports: [8443] }).port,
      '8443',
    );
    assert.equal(checkOutboundUrl('http://127.0.0.1:9/h', { allowPrivate: true }).port, '9');
  });
});
