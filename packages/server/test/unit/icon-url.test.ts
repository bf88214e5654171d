import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ICON_URL_MAX_CHARS, safeIconUrl } from '../../src/services/facilitator/icon-url.ts';

describe('bazaar resource.iconUrl: what the public listing may hand to every visitor', () => {
  it('keeps absolute http(s) URLs on DNS names, exactly as written', () => {
    for (const url of [
      'https://cdn.example.com/icon.png',
      'http://shop.example/i.svg?v=2',
      'https://xn--bcher-kva.example/logo.png',
      'https://bücher.example/logo.png',
    ]) {
      assert.equal(safeIconUrl(url), url);
    }
  });

  it('drops what is not a string, too long, or carries control characters', () => {
    for (const value of [undefined, null, 42, {}, ['https://a.example/i.png'], '']) {
      assert.equal(safeIconUrl(value), null, String(value));
    }
    const long = `https://a.example/${'x'.repeat(ICON_URL_MAX_CHARS)}`;
    assert.equal(safeIconUrl(long), null);
    assert.equal(safeIconUrl('https://a.example/i.png\n'), null);
    assert.equal(safeIconUrl('https://a.example/\u0000.png'), null);
  });

  it('drops other schemes, relative URLs and credentials', () => {
    for (const value of [
      'javascript:alert(1)',
      'data:image/png;base64,AAAA',
      'file:///etc/passwd',
      'ftp://a.example/i.png',
      '/icon.png',
      'https://user:pass@a.example/i.png',
      'https://user@a.example/i.png',
    ]) {
      assert.equal(safeIconUrl(value), null, value);
    }
  });

  it('drops this machine and addresses in every spelling a URL parser accepts', () => {
    for (const value of [
      'http://localhost/i.png',
      'http://LOCALHOST./i.png',
      'http://localhost.localdomain/i.png',
      'http://ip6-localhost/i.png',
      'http://app.localhost/i.png',
      'http://a.b.LOCALHOST./i.png',
      'http://ｌｏｃａｌｈｏｓｔ/i.png',
      'http://127.0.0.1/i.png',
      'http://10.0.0.7/i.png',
      'http://169.254.169.254/latest/meta-data',
      'http://2130706433/i.png',
      'http://0x7f000001/i.png',
      'http://0x7f.0.0.1/i.png',
      'http://017700000001/i.png',
      'http://%31%32%37.0.0.1/i.png',
      'http://[::1]/i.png',
      'http://[::ffff:127.0.0.1]/i.png',
    ]) {
      assert.equal(safeIconUrl(value), null, value);
    }
  });
});
