import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bearer, startTestGateway } from '../../support/test-gateway.ts';

const errorsPage = readFileSync(new URL('../../../../../docs/reference/errors.md', import.meta.url), 'utf8');
const srcDir = fileURLToPath(new URL('../../../src/', import.meta.url));

/** Every .ts file of the server but the catalogue itself, as one text. */
function sourcesWithoutCatalogue(): string {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && name !== 'error-catalogue.ts') texts.push(readFileSync(path, 'utf8'));
    }
  };
  walk(srcDir);
  return texts.join('\n');
}

/** The rows of the error reference: `| status | \`CODE\` | when | message |`. */
function errorRows(): { status: number; code: string; when: string }[] {
  return [...errorsPage.matchAll(/^\| (\d{3}) \| `([A-Z_]+)` \| (.*) \|$/gm)].map((m) => ({
    status: Number(m[1]),
    code: m[2] ?? '',
    when: m[3] ?? '',
  }));
}

describe('the error reference matches what the code answers', () => {
  it('lists codes that some code answers, or says the gateway never sends them', () => {
    const sources = sourcesWithoutCatalogue();
    const rows = errorRows();
    assert.ok(rows.length > 15, `${rows.length} rows`);
    for (const { code, when } of rows) {
      const neverSent = /never sends it/.test(when);
      const referenced = new RegExp(`['"\`]${code}['"\`]`).test(sources);
      if (neverSent) assert.ok(!referenced, `${code} is marked never sent, but code names it`);
      else assert.ok(referenced, `${code}: no code answers it; mark it "never sends it" or remove it`);
    }
  });

  it('says where EMAIL_ALREADY_REGISTERED comes from: the CLI, never sign-up', () => {
    const row = errorRows().find((r) => r.code === 'EMAIL_ALREADY_REGISTERED');
    assert.ok(row);
    assert.doesNotMatch(row.when, /^dashboard sign-up/);
    assert.match(row.when, /set-password/);
  });

  it('answers a body that is not JSON with 415 UNSUPPORTED_MEDIA_TYPE, as the table says', async () => {
    const gw = await startTestGateway();
    try {
      const { key } = await gw.newCaller('standard');
      for (const [type, payload] of [
        ['text/plain', '{"walletAddress":"x"}'],
        ['application/x-www-form-urlencoded', 'walletAddress=x'],
      ] as const) {
        const res = await gw.app.inject({
          method: 'POST',
          url: '/payment/send',
          headers: { ...bearer(key), 'content-type': type },
          payload,
        });
        assert.equal(res.statusCode, 415, `${type}: ${res.body}`);
        assert.equal(res.json().error.code, 'UNSUPPORTED_MEDIA_TYPE');
      }
    } finally {
      await gw.close();
    }
  });
});
