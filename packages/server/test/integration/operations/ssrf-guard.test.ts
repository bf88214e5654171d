import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import {
  checkOutboundUrl,
  isForbiddenAddress,
  OutboundUrlError,
  pinnedLookup,
  resolveOutbound,
} from '../../../src/outbound/ssrf-guard.ts';

const STRICT = { allowPrivate: false };
const LENIENT = { allowPrivate: true };

describe('SSRF guard', () => {
  it('refuses loopback, private, link-local, CGNAT, multicast and mapped forms; allows public', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.0.9',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      // IPv4-compatible and IPv4-translated forms, as a URL's host spells them.
      '::7f00:1',
      '::a9fe:a9fe',
      '::ffff:0:7f00:1',
      'not an address',
    ]) {
      assert.equal(isForbiddenAddress(address), true, address);
    }
    for (const address of ['1.1.1.1', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isForbiddenAddress(address), false, address);
    }
  });

  it('accepts only https URLs without credentials unless private targets are allowed', () => {
    assert.throws(() => checkOutboundUrl('http://example.com/hook', STRICT), /https:\/\//);
    assert.throws(() => checkOutboundUrl('ftp://example.com/', LENIENT), /http\(s\)/);
    assert.throws(() => checkOutboundUrl('https://user:pw@example.com/', STRICT), /user name/);
    assert.throws(() => checkOutboundUrl('not a url', STRICT), OutboundUrlError);
    assert.throws(() => checkOutboundUrl('https://[::1]:8443/', STRICT), /private/);
    assert.throws(() => checkOutboundUrl('https://169.254.169.254/latest', STRICT), /private/);
    for (const url of [
      'https://[::127.0.0.1]/',
      'https://[::169.254.169.254]/',
      'https://[::ffff:0:7f00:1]/',
    ])
      assert.throws(() => checkOutboundUrl(url, STRICT), /private/, url);
    assert.equal(checkOutboundUrl('https://example.com/hook', STRICT).hostname, 'example.com');
    assert.equal(checkOutboundUrl('http://127.0.0.1:9/x', LENIENT).port, '9');
  });

  it('resolves the host and refuses it when any answer is private (real DNS for localhost)', async () => {
    await assert.rejects(resolveOutbound('https://localhost/hook', STRICT), /private, loopback/);
    const mixed = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    await assert.rejects(resolveOutbound('https://mixed.example/hook', STRICT, mixed), /private/);
    const unresolvable = async () => {
      throw new Error('ENOTFOUND');
    };
    // The same answer as a private address (issue 23): unresolvable names cannot be told from internal ones.
    await assert.rejects(resolveOutbound('https://nx.example/', STRICT, unresolvable), /private, loopback/);
    const resolved = await resolveOutbound('https://public.example/', STRICT, async () => [
      { address: '93.184.216.34', family: 4 },
    ]);
    assert.deepEqual(resolved.addresses, [{ address: '93.184.216.34', family: 4 }]);
    const local = await resolveOutbound('http://localhost/', LENIENT);
    assert.ok(local.addresses.some((a) => a.address === '127.0.0.1' || a.address === '::1'));
  });

  it('pins the connection to the checked address: the name is never looked up again', async () => {
    const server = createServer((_req, res) => res.end('pinned'));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const { port } = server.address() as AddressInfo;
    try {
      // rebind.invalid cannot resolve (RFC 6761), so only the pinned lookup can connect this request.
      const resolved = await resolveOutbound(`http://rebind.invalid:${port}/`, LENIENT, async () => [
        { address: '127.0.0.1', family: 4 },
      ]);
      const body = await new Promise<string>((done, fail) => {
        const req = request(resolved.url, { lookup: pinnedLookup(resolved) }, (res) => {
          let text = '';
          res.on('data', (chunk) => {
            text += chunk;
          });
          res.on('end', () => done(text));
        });
        req.on('error', fail);
        req.end();
      });
      assert.equal(body, 'pinned');
    } finally {
      server.close();
    }
  });
});
