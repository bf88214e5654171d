import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  ARTIFACTS,
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

/**
 * The Refund button of a received payment (#30) in Chromium against the gateway as `npm start` runs it
 * (SQLite, the embedded localnet): the confirmation dialog opens from the keyboard, Escape closes it
 * with nothing sent, and a confirmed partial refund is made once and shown on the payment, under the
 * dashboard's CSP (any violation fails).
 */
describe('refunding a payment from the dashboard', { skip: skipWithoutChromium }, () => {
  let gateway: DashboardGateway;
  let browser: Browser;
  let watched: WatchedPage;
  let page: Page;

  const api = (key: string, method: string, path: string, body?: unknown) =>
    callApi(gateway.server.url, key, method, path, body);

  before(async () => {
    gateway = await startDashboardGateway('dashboard-refund');
    browser = await launchChromium();
    watched = await openPage(browser, gateway.server.url, { width: 1200, height: 900 });
    page = watched.page;
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('asks before refunding, sends nothing on Escape, and refunds the amount confirmed once', async () => {
    await signUp(page, gateway.server.url, `refund-${Date.now()}@example.test`);
    const key = await createApiKey(page, 'shop');

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
    // A refund of a payment that is only confirmed is held until it is finalized (docs/refunds.md): this
    // test refunds a final one, which is sent at once.
    for (const deadline = Date.now() + 60_000; ; ) {
      const { status } = await api(key, 'GET', `/payment/status/${paymentId}`);
      if (status === 'finalized') break;
      assert.ok(Date.now() < deadline, `the payment is still ${status} after 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const refunds = async () =>
      (await api(key, 'GET', `/payment/status/${paymentId}`)).refunds as {
        refunded: number;
        payments: unknown[];
      };

    await page.goto(`${gateway.server.url}/dashboard/payments/${paymentId}`);
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
    assert.deepEqual(watched.cspViolations, []);
  });
});
