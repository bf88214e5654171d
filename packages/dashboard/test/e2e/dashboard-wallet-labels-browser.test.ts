import assert from 'node:assert/strict';
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

/**
 * Wallet labels (#30) in Chromium against the gateway as `npm start` runs it: a label typed on the
 * Wallets page with the keyboard alone is saved, announced, and shown beside the address on the home
 * page's balances and in the payments list, at desktop and phone width (screenshots in test-artifacts/),
 * under the dashboard's CSP.
 */
describe('wallet labels in the dashboard', { skip: skipWithoutChromium }, () => {
  let gateway: DashboardGateway;
  let browser: Browser;
  let watched: WatchedPage;
  let page: Page;

  before(async () => {
    gateway = await startDashboardGateway('dashboard-labels');
    browser = await launchChromium();
    watched = await openPage(browser, gateway.server.url, { width: 1200, height: 800 });
    page = watched.page;
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('edits a label with the keyboard and shows it beside the address on Home and Payments', async () => {
    const url = gateway.server.url;
    await signUp(page, url, `labels-${Date.now()}@example.test`);
    const key = await createApiKey(page, 'shop');
    const api = (method: string, path: string, body?: unknown) => callApi(url, key, method, path, body);
    const till = (await api('POST', '/wallets', { chain: 'solana' })).address as string;
    const treasury = (await api('POST', '/wallets', { chain: 'solana', label: 'Treasury' }))
      .address as string;
    await api('POST', '/faucet', { address: till, amount: 1 });
    await api('POST', '/payment/send', { walletAddress: till, recipientAddress: treasury, amount: 0.25 });

    await goTo(page, 'Wallets');
    const card = page.locator('li.wallet').filter({ hasText: till });
    await card.getByRole('button', { name: `Copy address ${till}` }).waitFor();
    assert.equal(await card.getByTestId('wallet-label').count(), 0);
    // From the address's Copy button, Tab reaches the label field, named for its wallet.
    await card.getByRole('button', { name: `Copy address ${till}` }).focus();
    await page.keyboard.press('Tab');
    const field = card.getByLabel(`Label of wallet ${till}`);
    assert.equal(
      // A string: this file is type-checked without the DOM's types.
      await page.evaluate(
        `document.activeElement === document.getElementById(${JSON.stringify(await field.getAttribute('id'))})`,
      ),
      true,
      'the label field has focus',
    );
    await page.keyboard.type('  Shop till ');
    await page.keyboard.press('Enter');
    // Announced (a polite status), shown beside the address, trimmed.
    await card.getByRole('status').filter({ hasText: 'Label saved: Shop till.' }).waitFor();
    assert.equal(await card.getByTestId('wallet-label').textContent(), 'Shop till');
    assert.equal(await field.inputValue(), 'Shop till');
    const listed = (await api('GET', '/wallets')).wallets as { address: string; label: string | null }[];
    assert.deepEqual(
      listed.map((w) => [w.address, w.label]),
      [
        [till, 'Shop till'],
        [treasury, 'Treasury'],
      ],
    );
    await watched.shot('wallet-labels-wallets-desktop');

    await goTo(page, 'Home');
    const balance = (address: string) =>
      page.getByTestId('wallet-balance').filter({ has: page.locator(`code[title="${address}"]`) });
    await balance(till).getByTestId('wallet-label').filter({ hasText: 'Shop till' }).waitFor();
    assert.equal(await balance(treasury).getByTestId('wallet-label').textContent(), 'Treasury');
    await watched.shot('wallet-labels-home-desktop');

    await goTo(page, 'Payments');
    // The payment sent to the treasury names it beside the counterparty's address; the filter lists labels.
    const row = page.getByTestId('history').getByRole('row').filter({ hasText: 'sent' });
    await row.getByTestId('wallet-label').filter({ hasText: 'Treasury' }).waitFor();
    const options = await page
      .getByLabel('Wallet', { exact: true })
      .first()
      .locator('option')
      .allTextContents();
    assert.ok(
      options.some((o) => o.startsWith('Shop till · Solana')),
      options.join(' | '),
    );

    // Phone width: the label fits beside the address, nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await goTo(page, 'Home');
    await balance(till).getByTestId('wallet-label').waitFor();
    await watched.shot('wallet-labels-home-phone');
    await goTo(page, 'Wallets');
    await card.getByTestId('wallet-label').waitFor();
    await watched.shot('wallet-labels-wallets-phone');
    const overflow = Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
    assert.ok(overflow <= 0, `nothing is wider than the phone (${overflow} px too wide)`);

    // Emptied with the keyboard: the label is removed, and said so.
    await field.focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Enter');
    await card.getByRole('status').filter({ hasText: 'Label removed.' }).waitFor();
    assert.equal(await card.getByTestId('wallet-label').count(), 0);
    assert.deepEqual([...watched.cspViolations, ...watched.foreignRequests], []);
  });
});
