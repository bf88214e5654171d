import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  callApi,
  createApiKey,
  type DashboardGateway,
  launchChromium,
  openPage,
  signUp,
  skipWithoutChromium,
  startDashboardGateway,
  type WatchedPage,
} from '../support/dashboard-browser.ts';

const RESOURCE = 'https://api.example.test/reports/daily';

/**
 * The dashboard's home page in Chromium against the gateway as `npm start` runs it (SQLite, the
 * embedded localnet and anvil): after real payments through the API, it shows the totals with the
 * asset's symbol and sensible decimals, the daily volume as a chart and as a table, the resource that
 * earned, balances and recent payments; at desktop and phone width (screenshots in test-artifacts/),
 * under the dashboard's CSP (any violation fails), and usable from the keyboard.
 */
describe('the dashboard home page in a browser', { skip: skipWithoutChromium }, () => {
  let gateway: DashboardGateway;
  let browser: Browser;
  let watched: WatchedPage;
  let page: Page;

  const shot = (name: string) => watched.shot(name);
  const api = (key: string, method: string, path: string, body?: unknown) =>
    callApi(gateway.server.url, key, method, path, body);

  before(async () => {
    gateway = await startDashboardGateway('dashboard-home');
    browser = await launchChromium();
    watched = await openPage(browser, gateway.server.url, { width: 1200, height: 800 });
    page = watched.page;
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('shows what the account earned and spent, per asset and day, with the top resource, at desktop and phone width', async () => {
    await signUp(page, gateway.server.url, `home-${Date.now()}@example.test`);
    await page.getByTestId('no-volume').waitFor();
    const key = await createApiKey(page, 'shop');

    // A buyer and a seller wallet of this account; the buyer pays the seller twice for one resource.
    const buyer = (await api(key, 'POST', '/wallets', { chain: 'solana' })).address as string;
    const seller = (await api(key, 'POST', '/wallets', { chain: 'solana' })).address as string;
    await api(key, 'POST', '/faucet', { address: buyer, amount: 2 });
    for (const amount of [0.123456789, 0.1]) {
      const sent = await api(key, 'POST', '/payment/send', {
        walletAddress: buyer,
        recipientAddress: seller,
        amount,
        resource: RESOURCE,
      });
      await api(key, 'POST', '/payment/receive', {
        walletAddress: seller,
        paymentProof: sent.paymentProof,
        expectedAmount: amount,
        resource: RESOURCE,
      });
    }

    await page
      .getByRole('navigation', { name: 'Dashboard sections' })
      .getByRole('link', { name: 'Home' })
      .click();
    const total = page.getByTestId('asset-total').filter({ hasText: 'SOL' });
    await total.waitFor();
    // 0.223456789 SOL shown with six decimals, rounded on the digits; the exact amount in the title.
    assert.equal(await total.getByTestId('received').textContent(), '0.223457 SOL · 2 payments');
    assert.equal(await total.getByTestId('received').getAttribute('title'), '0.223456789 SOL');
    assert.equal(await total.getByTestId('sent').textContent(), '0.223457 SOL · 2 payments');
    const top = page.getByTestId('top-resources');
    assert.match((await top.getByRole('row').nth(1).textContent()) ?? '', /reports\/daily.*0\.223457 SOL.*2/);
    // The chart is drawn (a canvas in its box); its figures are in a table for screen readers.
    await page.getByTestId('volume-chart').locator('canvas').first().waitFor();
    await page.getByText('The same figures as a table').click();
    const today = new Date().toISOString().slice(0, 10);
    const row = page.getByRole('row').filter({ hasText: today });
    assert.match((await row.textContent()) ?? '', /0\.223457 \(2\).*0\.223457 \(2\)/);
    assert.equal(await page.getByTestId('wallet-balance').count(), 2);
    await page.getByRole('list', { name: 'Recent payments' }).getByRole('link').first().waitFor();
    await shot('home-desktop');

    // The period from the keyboard: focus the select, pick the last 7 days.
    await page.getByLabel('Period').focus();
    await page.keyboard.press('ArrowUp');
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    assert.equal(await page.getByLabel('Period').inputValue(), '7');
    await total.waitFor();

    await page.setViewportSize({ width: 390, height: 844 });
    await total.waitFor();
    const box = await page.getByTestId('volume-chart').boundingBox();
    assert.ok(box !== null && box.width <= 390, `the chart fits a phone: ${JSON.stringify(box)}`);
    await shot('home-phone');
    assert.deepEqual([...watched.cspViolations, ...watched.foreignRequests], []);
  });
});
