import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { newId } from '../../../src/domain/ids.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { csvCell } from '../../../src/services/payments/export/export-format.ts';
import { EXPORT_PAGE_SIZE } from '../../../src/services/payments/export/payment-export-service.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { aTestPayment } from '../../support/test-payment.ts';
import { until } from '../../support/until.ts';

/** A minimal RFC 4180 reader, to check what a spreadsheet would read back. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  assert.equal(cell, '', 'the file ends with CRLF');
  return rows;
}

const T0 = Date.UTC(2026, 0, 10);
const DAY = 86_400_000;

function describeExport(name: string, storage: () => Promise<TempStorage>, skip: string | false) {
  describe(`GET /payment/export on ${name}`, { skip }, () => {
    let chain: TestChain;
    let gw: TestGateway;
    let caller: { accountId: string; key: string };
    let other: { accountId: string; key: string };
    let wallet: string;
    let network: string;
    const mine: PaymentRecord[] = [];

    before(async () => {
      chain = await startTestChain();
      network = chain.adapter.info.id;
      gw = await startTestGateway({
        storage: await storage(),
        networks: new NetworkRegistry([chain.adapter]),
      });
      caller = await gw.newCaller('standard');
      other = await gw.newCaller('standard');
      const created = await gw.services.wallets.create(caller.accountId, { chain: 'solana', network });
      wallet = created.address;
      // 2.5 pages in the range, the same millisecond shared by many rows (the keyset's id tie-break),
      // plus rows outside it on either side and another account's rows inside it.
      const count = Math.floor(EXPORT_PAGE_SIZE * 2.5);
      const rows: PaymentRecord[] = [];
      for (let i = 0; i < count; i++) {
        rows.push(
          aTestPayment(T0 + Math.floor(i / 7), caller.accountId, {
            network,
            walletAddress: wallet,
            sender: wallet,
            amount: BigInt(i + 1),
          }),
        );
      }
      await gw.store.transaction(async (tx) => {
        for (const p of rows) await tx.payments.insert(p);
      });
      mine.push(...rows);
      await gw.store.payments.insert(
        aTestPayment(T0 - 1, caller.accountId, { network, walletAddress: wallet }),
      );
      await gw.store.payments.insert(
        aTestPayment(T0 + DAY, caller.accountId, { network, walletAddress: wallet }),
      );
      // What a payer or caller wrote, in the cells a spreadsheet would run.
      await gw.store.payments.insert(
        aTestPayment(T0 + 2 * DAY, caller.accountId, {
          network,
          walletAddress: wallet,
          refundOf: mine[0]?.id ?? '',
          refundReason: '=HYPERLINK("http://evil.example","refund, click")',
          metadata: { note: 'line one\r\nline "two"' },
        }),
      );
      await gw.store.payments.insert(
        aTestPayment(T0 + 5, other.accountId, { network, walletAddress: 'OTHERWALLET', id: newId('pay') }),
      );
    });
    after(async () => {
      await gw?.close();
      await chain?.close();
    });

    it('streams every payment of the range across pages, oldest first, once each, as CSV', async () => {
      const res = await gw.app.inject({
        method: 'GET',
        url: `/payment/export?format=csv&from=${T0}&to=2026-01-10`,
        headers: bearer(caller.key),
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^text\/csv; charset=utf-8/);
      assert.equal(
        res.headers['content-disposition'],
        'attachment; filename="gate402-payments-account-2026-01-10_2026-01-10.csv"',
      );
      const [header, ...rows] = parseCsv(res.body);
      assert.ok(header);
      const col = (n: string) => header.indexOf(n);
      assert.equal(rows.length, mine.length);
      const sorted = [...mine].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
      assert.deepEqual(
        rows.map((r) => r[col('paymentId')]),
        sorted.map((p) => p.id),
      );
      const first = rows.find((r) => r[col('paymentId')] === mine[0]?.id);
      assert.ok(first);
      assert.equal(first[col('amount')], '0.000000001');
      assert.equal(first[col('amountAtomic')], '1');
      assert.equal(first[col('asset')], 'SOL');
      assert.equal(first[col('decimals')], '9');
      assert.equal(first[col('assetAddress')], '');
      assert.equal(first[col('type')], 'sent');
      assert.equal(first[col('createdAt')], '2026-01-10T00:00:00.000Z');
      assert.equal(first[col('timestamp')], String(T0));
    });

    it('writes JSON Lines with exact amounts, and a wallet filter', async () => {
      const res = await gw.app.inject({
        method: 'GET',
        url: `/payment/export?format=jsonl&wallet=${wallet}&from=2026-01-09T00:00:00Z&to=2026-01-11`,
        headers: bearer(caller.key),
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^application\/jsonl/);
      const lines = res.body
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.equal(lines.length, mine.length + 2, "the wallet's payments of 9 to 11 January");
      const last = lines.at(-1);
      assert.equal(last?.timestamp, T0 + DAY);
      const big = lines.find((l) => l.paymentId === mine.at(-1)?.id);
      assert.equal(big?.amount, '0.0000025');
      assert.equal(big?.amountAtomic, String(mine.length));
    });

    it('quotes cells and defuses formulas a spreadsheet would run', async () => {
      const res = await gw.app.inject({
        method: 'GET',
        url: `/payment/export?from=${T0 + 2 * DAY}`,
        headers: bearer(caller.key),
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(res.body.includes('"\'=HYPERLINK(""http://evil.example"",""refund, click"")"'));
      const [header, row] = parseCsv(res.body);
      assert.ok(header && row);
      assert.equal(row.length, header.length);
      assert.equal(row[header.indexOf('type')], 'refund');
      assert.equal(row[header.indexOf('refundOf')], mine[0]?.id);
      assert.equal(
        row[header.indexOf('refundReason')],
        '\'=HYPERLINK("http://evil.example","refund, click")',
      );
      assert.deepEqual(JSON.parse(row[header.indexOf('metadata')] ?? ''), { note: 'line one\r\nline "two"' });
    });

    it('answers HEAD with the headers alone, reading one page', async () => {
      const res = await gw.app.inject({
        method: 'HEAD',
        url: '/payment/export',
        headers: bearer(caller.key),
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.body, '');
      assert.match(
        String(res.headers['content-disposition']),
        /^attachment; filename="gate402-payments-account-/,
      );
      await until('the HEAD export to close', async () => gw.services.exports.openExports === 0);
      const refused = await gw.app.inject({
        method: 'HEAD',
        url: '/payment/export?from=x',
        headers: bearer(caller.key),
      });
      assert.equal(refused.statusCode, 400);
    });

    it('never shows another account a payment of this one', async () => {
      const res = await gw.app.inject({
        method: 'GET',
        url: '/payment/export?format=jsonl',
        headers: bearer(other.key),
      });
      assert.equal(res.statusCode, 200);
      const lines = res.body.trimEnd().split('\n');
      assert.equal(lines.length, 1);
      assert.equal(JSON.parse(lines[0] ?? '').wallet, 'OTHERWALLET');
      const mineOnly = await gw.app.inject({
        method: 'GET',
        url: `/payment/export?format=csv&wallet=${wallet}`,
        headers: bearer(other.key),
      });
      assert.equal(mineOnly.statusCode, 403);
      assert.deepEqual(mineOnly.json().error.details, { wallet: 'is not a wallet of this account' });
    });

    it('refuses bad parameters with INVALID_PARAMETERS naming the field', async () => {
      const cases: [string, string][] = [
        ['format=xlsx', 'format'],
        ['from=yesterday', 'from'],
        ['to=2026-02-30', 'to'],
        ['from=2026-01-10&to=2026-01-09', 'to'],
        ['wallet=not-an-address', 'wallet'],
        ['limit=5', 'limit'],
      ];
      for (const [query, field] of cases) {
        const res = await gw.app.inject({
          method: 'GET',
          url: `/payment/export?${query}`,
          headers: bearer(caller.key),
        });
        assert.equal(res.statusCode, 400, query);
        const body = res.json();
        assert.equal(body.error.code, 'INVALID_PARAMETERS', query);
        assert.ok(Object.keys(body.error.details).includes(field), `${query}: ${JSON.stringify(body.error)}`);
      }
    });

    it('stops reading, and ends, when the client goes away mid-stream', async () => {
      const exports = gw.services.exports;
      const address = await gw.gateway.listen();
      // The second page's read waits until the client has hung up, so the export is mid-stream then.
      const payments = gw.store.payments;
      const read = payments.exportPage.bind(payments);
      let pages = 0;
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      payments.exportPage = async (query) => {
        pages += 1;
        if (pages === 2) await gate;
        return read(query);
      };
      const serverSocketClosed = new Promise<void>((resolve) => {
        gw.app.server.once('connection', (socket) => socket.once('close', () => resolve()));
      });
      try {
        await new Promise<void>((resolve, reject) => {
          const req = httpRequest(new URL('/payment/export?format=csv', address), {
            headers: bearer(caller.key),
          });
          req.on('response', (res) => {
            if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
            // The header and the first page, then hang up without reading the rest.
            res.once('data', () => {
              req.destroy();
              resolve();
            });
          });
          req.on('error', (error) => {
            if (!req.destroyed) reject(error);
          });
          req.end();
        });
        await serverSocketClosed;
        assert.equal(exports.openExports, 1, 'the export waits on its second page');
        // Past the close handlers the server runs for the socket, then the second page comes back.
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));
        release();
        await until('the export to end after its client left', async () => exports.openExports === 0);
        assert.equal(pages, 2, 'no page is read after the client left');
        // And a new export still runs to its end.
        const res = await gw.app.inject({
          method: 'GET',
          url: '/payment/export',
          headers: bearer(caller.key),
        });
        assert.equal(parseCsv(res.body).length, mine.length + 4, 'the header and every payment');
        assert.equal(exports.openExports, 0);
      } finally {
        payments.exportPage = read;
        release();
      }
    });
  });
}

describeExport('SQLite file', async () => tempSqlite(), false);
describeExport('PostgreSQL', async () => tempPostgres(), SKIP_POSTGRES);

describe('CSV cells', () => {
  it('quote as RFC 4180 says and defuse formulas', () => {
    assert.equal(csvCell('plain'), 'plain');
    assert.equal(csvCell('a,b'), '"a,b"');
    assert.equal(csvCell('say "hi"'), '"say ""hi"""');
    assert.equal(csvCell('two\r\nlines'), '"two\r\nlines"');
    assert.equal(csvCell('=HYPERLINK("http://x","y")'), `"'=HYPERLINK(""http://x"",""y"")"`);
    assert.equal(csvCell('+1'), "'+1");
    assert.equal(csvCell('-1+2'), "'-1+2");
    assert.equal(csvCell('@SUM(A1)'), "'@SUM(A1)");
    assert.equal(csvCell('\tx'), "'\tx");
    assert.equal(csvCell('\rx'), `"'\rx"`);
    assert.equal(csvCell(null), '');
    assert.equal(csvCell({ a: '=1' }), '"{""a"":""=1""}"');
  });
});
