import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostAllowed, hostOf, normalisedHostEntry } from '../../src/services/spending/allowed-hosts.ts';

describe('allowedHosts of a spend policy', () => {
  it('stores an entry as a URL parser spells its host, and refuses what is not a host name', () => {
    assert.equal(normalisedHostEntry(' API.Example.COM '), 'api.example.com');
    assert.equal(normalisedHostEntry('*.Shop.Example'), '*.shop.example');
    assert.equal(normalisedHostEntry('bücher.example'), 'xn--bcher-kva.example');
    assert.equal(normalisedHostEntry('example.com.'), 'example.com');
    for (const bad of [
      '',
      '*.',
      'https://example.com',
      'example.com/path',
      'example.com:8080',
      'user@example.com',
      'a b.example',
      '*.*.example',
      'ex*ample.com',
    ]) {
      assert.equal(normalisedHostEntry(bad), undefined, bad);
    }
  });

  it('matches a resource URL by its host only, subdomains only through a wildcard', () => {
    const allowed = ['api.example.com', '*.shop.example', 'xn--bcher-kva.example'];
    for (const url of [
      'https://api.example.com/x?y=1',
      'http://API.EXAMPLE.COM:8443/',
      'https://a.shop.example/',
      'https://x.y.shop.example/',
      'https://bücher.example/',
    ]) {
      assert.equal(hostAllowed(allowed, url), true, url);
    }
    for (const url of [
      null,
      'https://example.com/',
      'https://shop.example/',
      'https://api.example.com.evil.test/',
      'https://evilshop.example/',
      'ftp://api.example.com/',
      'not a url',
      'https://user@evil.test/@api.example.com',
    ]) {
      assert.equal(hostAllowed(allowed, url), false, String(url));
    }
    assert.equal(hostOf('https://api.example.com./'), 'api.example.com');
  });
});
