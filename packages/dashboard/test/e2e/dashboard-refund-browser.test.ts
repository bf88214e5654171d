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

/**
 * The Refund button of a received payment (#30) in Chromium against the gateway as `npm start` runs it
 * (SQLite, the embedded localnet): the confirmation dialog opens from the keyboard, Escape closes it
 * with nothing sent, and a confirmed partial refund is made once and shown on the payment, under the
 * dashboard's CSP (any violation fails).
 */
describe('refunding a payment from the dashboard', { skip }, () => {
  let server: RunningServer;
  let dataDir: string;
  let browser: Browser;
  let page: Page;
  const violations: string[] = [];

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
    dataDir = mkdtempSync(join(tmpdir(), 'gate402-dashboard-refund-'));
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
      ],
    });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.setDefaultTimeout(20_000);
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  it('asks before refunding, sends nothing on Escape, and refunds the amount confirmed once', async () => {
    await page.goto(`${server.url}/dashboard`);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByLabel('Email').fill(`refund-${Date.now()}@example.test`);
    await page.getByLabel('Password').fill('a long enough password');
    await page.getByRole('button', { name: 'Sign up' }).click();
    const nav = page.getByRole('navigation', { name: 'Dashboard sections' });
    await nav.waitFor();
    await nav.getByRole('link', { name: 'API Keys' }).click();
    await page.getByLabel('Key name').fill('shop');
    await page.getByRole('button', { name: 'Generate key' }).click();
    const key = (await page.getByTestId('new-key').textContent()) ?? '';
    await page.getByRole('button', { name: 'I have stored it' }).click();

    // A buyer pays the account's seller wallet 0.5 SOL, which the seller records with the proof.
    const buyer = (await api(key, 'POST', '/wallets', { chain: 'solana' })).address as string;
    const seller = (await api(key, 'POST', '/wallets', { chain: 'solana' })).address as string;
    await api(key, 'POST', '/faucet', { address: buyer, amount: 2 });
    const sent = await api(key, 'POST', '/payment/send', {
      walletAddress: buyer,
      recipientAddress: seller,
      amount: 0.5,
    });
    const received = await api(key, 'POST', '/payment/receive', {
      walletAddress: seller,
      paymentProof: sent.paymentProof,
      expectedAmount: 0.5,
    });
    const paymentId = received.paymentId as string;
    const refunds = async () =>
      (await api(key, 'GET', `/payment/status/${paymentId}`)).refunds as {
        refunded: number;
        payments: unknown[];
      };

    await page.goto(`${server.url}/dashboard/payments/${paymentId}`);
    const refundButton = page.getByRole('button', { name: 'Refund', exact: true });
    await refundButton.waitFor();

    // From the keyboard: the dialog opens, is announced by its title, and Escape closes it; nothing sent.
    await refundButton.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Refund this payment?' });
    await dialog.waitFor();
    assert.match(
      (await dialog.textContent()) ?? '',
      new RegExp(`payer ${buyer}.*Up to 0\\.5 SOL can be refunded`),
    );
    assert.equal(
      // A string: this file is type-checked without the DOM's types.
      await page.evaluate("document.activeElement?.closest('dialog') !== null"),
      true,
      'focus moved into the dialog',
    );
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await refunds()).payments.length, 0);

    // Confirmed with an amount: one refund of exactly that, shown on the payment.
    await refundButton.click();
    await dialog.getByLabel('Amount (SOL)').fill('0.2');
    await dialog.getByLabel('Reason (optional)').fill('half the report was missing');
    await page.screenshot({ path: join(ARTIFACTS, 'refund-dialog.png') });
    await dialog.getByRole('button', { name: 'Refund 0.2 SOL' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Refund pay_.* of 0\.2 SOL: confirmed/ })
      .waitFor();
    await page.getByText('0.2 SOL refunded; 0.3 refundable').waitFor();
    const after = await refunds();
    assert.equal(after.refunded, 0.2);
    assert.equal(after.payments.length, 1);
    assert.deepEqual(violations, []);
  });
});
