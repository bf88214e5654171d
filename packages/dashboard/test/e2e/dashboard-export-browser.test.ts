import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  callApi,
  createApiKey,
  type DashboardGateway,
  goTo,
  launchChromium,
  openPage,
  signUp,
  skipWithoutChromium,
  startDashboardGateway,
  type WatchedPage,
} from '../support/dashboard-browser.ts';

/** A CSV line's cells (the export quotes a cell only when it must; none of these need it). */
const cells = (line: string) => line.split(',');

/**
 * The Payments page's export form (#30) in Chromium against the gateway as `npm start` runs it: a CSV of a
 * date range downloads with exactly the account's payments of those days, a wallet narrows it to that
 * wallet's, and a range before them gives the header alone; under the dashboard's CSP.
 */
describe('exporting payments from the dashboard', { skip: skipWithoutChromium }, () => {
  let gateway: DashboardGateway;
  let browser: Browser;
  let watched: WatchedPage;
  let page: Page;

  before(async () => {
    gateway = await startDashboardGateway('dashboard-export');
    browser = await launchChromium();
    watched = await openPage(browser, gateway.server.url, { width: 1200, height: 900 });
    page = watched.page;
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  /** Fills the form, presses Download and answers the downloaded file's lines. */
  async function download(range: { from: string; to: string; wallet?: string }): Promise<string[]> {
    const form = page.getByTestId('export-form');
    await form.getByLabel('From (UTC)').fill(range.from);
    await form.getByLabel('To, included (UTC)').fill(range.to);
    await form.getByLabel('Wallet').selectOption(range.wallet ?? '');
    await form.getByLabel('CSV (spreadsheets)').check();
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      form.getByRole('button', { name: 'Download' }).click(),
    ]);
    assert.match(file.suggestedFilename(), /\.csv$/);
    const path = await file.path();
    return (await readFile(path, 'utf8')).split(/\r?\n/).filter((line) => line !== '');
  }

  it('downloads a CSV of the payments of a date range, of one wallet, and of days without any', async () => {
    const url = gateway.server.url;
    await signUp(page, url, `export-${Date.now()}@example.test`);
    const key = await createApiKey(page, 'shop');
    const api = (method: string, path: string, body?: unknown) => callApi(url, key, method, path, body);
    const buyer = (await api('POST', '/wallets', { chain: 'solana' })).address as string;
    const seller = (await api('POST', '/wallets', { chain: 'solana' })).address as string;
    await api('POST', '/faucet', { address: buyer, amount: 2 });
    const ids: string[] = [];
    for (const amount of [0.125, 0.5]) {
      const sent = await api('POST', '/payment/send', {
        walletAddress: buyer,
        recipientAddress: seller,
        amount,
        resource: 'https://api.example.test/report',
      });
      const received = await api('POST', '/payment/receive', {
        walletAddress: seller,
        paymentProof: sent.paymentProof,
        expectedAmount: amount,
      });
      ids.push(sent.paymentId as string, received.paymentId as string);
    }

    await goTo(page, 'Payments');
    const today = new Date().toISOString().slice(0, 10);
    const lines = await download({ from: today, to: today });
    await page.getByRole('status').filter({ hasText: 'Your download has started.' }).waitFor();
    const [header, ...rows] = lines;
    const columns = cells(header ?? '');
    const column = (row: string, name: string) => cells(row)[columns.indexOf(name)];
    assert.deepEqual(columns.slice(0, 3), ['paymentId', 'type', 'status']);
    assert.equal(rows.length, 4, lines.join('\n'));
    assert.deepEqual(new Set(rows.map((r) => column(r, 'paymentId'))), new Set(ids));
    const byType = (type: string) =>
      rows
        .filter((r) => column(r, 'type') === type)
        .map((r) => [column(r, 'wallet'), column(r, 'amount'), column(r, 'asset'), column(r, 'amountAtomic')])
        .sort();
    assert.deepEqual(byType('sent'), [
      [buyer, '0.125', 'SOL', '125000000'],
      [buyer, '0.5', 'SOL', '500000000'],
    ]);
    assert.deepEqual(byType('received'), [
      [seller, '0.125', 'SOL', '125000000'],
      [seller, '0.5', 'SOL', '500000000'],
    ]);

    // One wallet: the seller's two receipts only.
    const sellers = await download({ from: today, to: today, wallet: seller });
    assert.deepEqual(
      sellers.slice(1).map((r) => [column(r, 'type'), column(r, 'wallet')]),
      [
        ['received', seller],
        ['received', seller],
      ],
    );

    // Days before the payments: the header alone.
    const before = await download({ from: '2020-01-01', to: '2020-01-31' });
    assert.deepEqual(before, [header]);
    assert.deepEqual([...watched.cspViolations, ...watched.foreignRequests], []);
  });
});
