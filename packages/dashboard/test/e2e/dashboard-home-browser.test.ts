import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig, type RunningServer, startServer } from 'gate402';
import { type Browser, chromium, type Page } from 'playwright-core';
import { buildDashboard, isDashboardBuilt } from '../../node/index.ts';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: dashboard browser tests skipped`;
const RESOURCE = 'https://api.example.test/reports/daily';

/**
 * The dashboard's home page in Chromium against the gateway as `npm start` runs it (SQLite, the
 * embedded localnet and anvil): after real payments through the API, it shows the totals with the
 * asset's symbol and sensible decimals, the daily volume as a chart and as a table, the resource that
 * earned, balances and recent payments; at desktop and phone width (screenshots in test-artifacts/),
 * under the dashboard's CSP (any violation fails), and usable from the keyboard.
 */
describe('the dashboard home page in a browser', { skip }, () => {
  let server: RunningServer;
  let dataDir: string;
  let browser: Browser;
  let page: Page;
  const violations: string[] = [];

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const api = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(json)}`);
    return json;
  };

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    if (!isDashboardBuilt()) await buildDashboard();
    dataDir = mkdtempSync(join(tmpdir(), 'gate402-dashboard-home-'));
    server = await startServer(
      loadConfig({
        PORT: '0',
        LOCALNET_PORT: '0',
        ANVIL_PORT: '0',
        LOCALNET_SLOT_MS: '20',
        RECONCILE_INTERVAL_MS: '200',
        DATA_DIR: dataDir,
        GATE402_DEMO: 'false',
        LOG_LEVEL: 'silent',
        EVENTS_POLL_MS: '200',
      }),
    );
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    page.setDefaultTimeout(20_000);
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.origin !== new URL(server.url).origin && url.protocol !== 'data:') {
        violations.push(`fetched ${request.url()}`);
      }
    });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows what the account earned and spent, per asset and day, with the top resource, at desktop and phone width', async () => {
    await page.goto(`${server.url}/dashboard`);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByLabel('Email').fill(`home-${Date.now()}@example.test`);
    await page.getByLabel('Password').fill('a long enough password');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    await page.getByTestId('no-volume').waitFor();

    await page
      .getByRole('navigation', { name: 'Dashboard sections' })
      .getByRole('link', { name: 'API Keys' })
      .click();
    await page.getByLabel('Key name').fill('shop');
    await page.getByRole('button', { name: 'Generate key' }).click();
    const key = (await page.getByTestId('new-key').textContent()) ?? '';
    await page.getByRole('button', { name: 'I have stored it' }).click();

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
    assert.deepEqual(violations, []);
  });
});
