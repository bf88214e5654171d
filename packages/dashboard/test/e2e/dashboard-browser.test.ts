import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import type { RunningServer } from 'gate402';
import type { Browser, Page } from 'playwright-core';
import {
  type DashboardGateway,
  goTo as goToSection,
  launchChromium,
  openPage,
  PASSWORD,
  skipWithoutChromium,
  startDashboardGateway,
  type WatchedPage,
} from '../support/dashboard-browser.ts';

/**
 * The dashboard in a real browser (Debian chromium through playwright-core) against the real gateway as
 * `npm start` runs it: SQLite in a temporary DATA_DIR, the embedded Solana localnet and anvil. One browser
 * for the whole file; each step saves a screenshot to packages/dashboard/test-artifacts/.
 */
describe('the dashboard in a browser', { skip: skipWithoutChromium }, () => {
  let gateway: DashboardGateway;
  let server: RunningServer;
  let browser: Browser;
  let watched: WatchedPage;
  let page: Page;
  const email = `owner-${Date.now()}@example.test`;

  const shot = (name: string) => watched.shot(name);
  const api = (path: string, key: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${server.url}${path}`, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  const goTo = (section: string) => goToSection(page, section);

  before(async () => {
    gateway = await startDashboardGateway('dashboard', { ALLOW_PRIVATE_OUTBOUND_URLS: 'true' });
    server = gateway.server;
    browser = await launchChromium();
    watched = await openPage(browser, server.url, { width: 1200, height: 800 });
    page = watched.page;
  });

  // The page must need nothing from anywhere but the gateway.
  afterEach(() => {
    assert.deepEqual(watched.foreignRequests, []);
  });

  after(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('signs up, creates a key that works against the API, deletes it, and the key gets 401', async () => {
    await page.goto(`${server.url}/dashboard`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await shot('01-log-in');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('too short');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('alert').getByText('password must be 10 to 200 characters').waitFor();
    await shot('02-sign-up-refused');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    await goTo('Plan & usage');
    assert.equal(await page.getByTestId('plan').textContent(), 'Standard');
    await shot('03-plan-and-usage');

    await goTo('API Keys');
    await page.getByLabel('Key name').fill('production server');
    await page.getByRole('button', { name: 'Generate key' }).click();
    const key = (await page.getByTestId('new-key').textContent()) ?? '';
    assert.match(key, /^g402_sk_/);
    await page.getByText('it is shown only once').waitFor();
    await shot('04-api-key-created');

    const minute = Math.floor(Date.now() / 60_000);
    const account = await api('/account', key);
    assert.equal(account.status, 200);
    assert.equal(((await account.json()) as { plan: string }).plan, 'standard');

    await page.getByRole('button', { name: 'I have stored it' }).click();
    const row = page.getByRole('row').filter({ hasText: 'production server' });
    await row.getByRole('button', { name: 'Delete' }).click();
    await shot('05-api-key-delete-confirmation');
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText('No keys yet.').waitFor();
    assert.equal((await api('/account', key)).status, 401);

    await goTo('Plan & usage');
    // The API call above is counted in its one-minute window (the dashboard's own requests are not).
    const counted = Math.floor(Date.now() / 60_000) === minute ? 1 : 0;
    assert.match((await page.getByTestId('usage').textContent()) ?? '', new RegExp(`^${counted} of 100`));
  });

  it("creates an admin key and an agent key, and sets the agent key's spend policy, which the agent cannot lift", async () => {
    await goTo('API Keys');
    await page.getByLabel('Key name').fill('ops');
    await page.getByLabel('Admin: may set spend policies').check();
    await page.getByRole('button', { name: 'Generate key' }).click();
    const adminKey = (await page.getByTestId('new-key').textContent()) ?? '';
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByLabel('Key name').fill('agent');
    await page.getByRole('button', { name: 'Generate key' }).click();
    const agentKey = (await page.getByTestId('new-key').textContent()) ?? '';
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('row').filter({ hasText: 'ops' }).getByText('admin').waitFor();

    const network = (
      (await (await api('/networks', agentKey)).json()) as { networks: { id: string; family: string }[] }
    ).networks.find((n) => n.family === 'solana')?.id;
    assert.ok(network !== undefined);
    await page.getByLabel('Policy of').selectOption({ label: 'key “agent”' });
    // A bad amount is refused naming the field; the page shows it.
    const policy = (maxPerDay: string) =>
      JSON.stringify({ limits: [{ network, asset: 'SOL', maxPerPayment: '0.1', maxPerDay }] });
    await page.getByLabel('Policy (JSON)').fill(policy('0.0000000001'));
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('alert').getByText('limits[0].maxPerDay must be a decimal amount').waitFor();
    await page.getByLabel('Policy (JSON)').fill(policy('2'));
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('status').getByText('Policy saved.').waitFor();
    await shot('05b-spend-policy-saved');

    // The agent sees what binds it, and cannot lift it; the admin key can read it.
    const own = (await (await api('/spend-policy', agentKey)).json()) as {
      daily: { scope: string; maxPerDay: string; remaining: string }[];
    };
    assert.deepEqual(own.daily, [
      { scope: 'key', network, asset: 'SOL', maxPerDay: '2', spent: '0', remaining: '2' },
    ]);
    const lift = await api('/spend-policies/account', agentKey, { method: 'PUT', body: { limits: null } });
    assert.equal(lift.status, 403);
    const listed = (await (await api('/spend-policies', adminKey)).json()) as {
      policies: { keyId: string }[];
    };
    assert.equal(listed.policies.length, 1);

    await page.getByRole('button', { name: 'Remove policy' }).click();
    await page.getByRole('status').getByText('Policy removed.').waitFor();
    assert.equal(
      ((await (await api('/spend-policy', agentKey)).json()) as { policies: unknown[] }).policies.length,
      0,
    );
  });

  it('logs out and logs back in with the keyboard alone', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await page.getByLabel('Email').focus();
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
  });

  it('creates Solana and EVM wallets, funds them from the faucet in the native currency and USDC, and the balances show with symbol and decimals', async () => {
    await goTo('Wallets');
    await page.getByRole('button', { name: 'Create Solana wallet' }).click();
    const card = page.locator('li.wallet').first();
    await card.getByTestId('balance').getByText('0 SOL').waitFor();
    assert.equal(await card.getByRole('img', { name: /^QR code of / }).count(), 1);
    await card.getByRole('button', { name: 'Fund from faucet' }).click();
    await card.getByTestId('balance').getByText('1 SOL').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Create EVM wallet' }).click();
    const evm = page.locator('li.wallet').filter({ hasText: 'EVM wallet' });
    await evm.getByTestId('balance').getByText('0 ETH').waitFor();
    await evm.getByRole('button', { name: 'Fund from faucet' }).click();
    await evm.getByTestId('balance').getByText('1 ETH').waitFor({ timeout: 30_000 });
    // Tokens of the local chains: none before, then what the faucet minted, with symbol and decimals.
    for (const wallet of [card, evm]) {
      assert.equal(await wallet.getByTestId('token-balance').count(), 0);
      await wallet.getByRole('button', { name: 'Faucet USDC' }).click();
      await wallet.getByTestId('token-balance').getByText('100 USDC').waitFor({ timeout: 30_000 });
      assert.equal(await wallet.getByTestId('token-balance').getByText('(6 decimals)').count(), 1);
    }
    await shot('06-wallets-funded');
    await page.setViewportSize({ width: 390, height: 844 });
    await shot('07-wallets-phone-width');
    // A string, evaluated in the page: this file is type-checked without the DOM's types.
    const overflow = Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
    assert.ok(overflow <= 0, `nothing is wider than the phone (${overflow} px too wide)`);
    await page.setViewportSize({ width: 1200, height: 800 });
  });

  it('shows a payment made through the API in the live list without a reload, and its detail', async () => {
    const user = await server.store.dashboardUsers.findByEmail(email);
    assert.ok(user);
    // The live list and webhooks are Premium features, in the dashboard as through the API (one policy
    // at every door); the operator upgrades the account, and the page picks the plan up on its next load.
    await server.services.accounts.setPlan(user.accountId, { plan: 'premium' });
    await page.reload();
    const { key } = await server.services.accounts.createKey(user.accountId, 'payer');
    const [wallet] = await server.services.wallets.list(user.accountId);
    assert.ok(wallet);
    const recipient = (await (
      await api('/wallets', key, { method: 'POST', body: { chain: 'solana' } })
    ).json()) as {
      address: string;
    };

    await goTo('Payments');
    await page.locator('.dot.on').waitFor();
    const sent = await api('/payment/send', key, {
      method: 'POST',
      body: { walletAddress: wallet.address, recipientAddress: recipient.address, amount: 0.25 },
    });
    assert.equal(sent.status, 200, await sent.clone().text());
    const { paymentId } = (await sent.json()) as { paymentId: string };
    const live = page.getByTestId('live-list');
    await live.getByRole('link', { name: paymentId }).first().waitFor();
    await page.getByTestId('history').getByRole('cell', { name: 'sent' }).first().waitFor();
    await shot('08-payments-live');

    await live.getByRole('link', { name: paymentId }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Payment' }).waitFor();
    await page.getByText(paymentId).waitFor();
    await page.getByText('none for this network').waitFor();
    await shot('09-payment-detail');
  });

  it('resumes the live list from the last event after the gateway drops the stream: no gap, no repeat', async () => {
    const user = await server.store.dashboardUsers.findByEmail(email);
    assert.ok(user);
    const { key } = await server.services.accounts.createKey(user.accountId, 'payer again');
    // The funded Solana wallet and the one the earlier payment went to.
    const [from, to] = (await server.services.wallets.list(user.accountId)).filter(
      (w) => w.chain === 'solana',
    );
    assert.ok(from && to);
    await goTo('Payments');
    await page.locator('.dot.on').waitFor();
    const live = page.getByTestId('live-list');
    // The last event the list has shown: the id the browser must resume from.
    const before = await api('/payment/send', key, {
      method: 'POST',
      body: { walletAddress: from.address, recipientAddress: to.address, amount: 0.01 },
    });
    assert.equal(before.status, 200, await before.clone().text());
    const { paymentId: first } = (await before.json()) as { paymentId: string };
    await live.getByRole('link', { name: first }).first().waitFor();
    const shown = async () =>
      (
        await live.locator('li').evaluateAll((items) => items.map((li) => li.getAttribute('data-event-id')))
      ).filter((id): id is string => id !== null);
    const accountEvents = async () =>
      (await server.store.events.listAfter(user.accountId, 0, 1_000)).map((e) => ({
        id: e.id,
        paymentId: e.paymentId,
      }));
    // Wait until every event of that payment is shown, so the newest id is known.
    for (const event of (await accountEvents()).filter((e) => e.paymentId === first)) {
      await live.locator(`li[data-event-id="${event.id}"]`).waitFor();
    }

    // Reconnections wait until the payment below is made, so it happens while the page is disconnected.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const reconnections: string[] = [];
    await page.route('**/dashboard/api/payments/live**', async (route) => {
      // (Chromium adds Last-Event-ID below the layer Playwright sees, so the header is not checked here:
      // the events shown below can only have come from a replay after it.)
      reconnections.push(route.request().url());
      await held;
      await route.continue();
    });
    server.app.server.closeAllConnections();
    await page.locator('.dot.on').waitFor({ state: 'detached' });
    // Disconnected, nothing more arrives: the newest event shown is where the browser must resume.
    const lastSeen = (await shown())[0];
    await shot('11-live-list-disconnected');
    const during = await api('/payment/send', key, {
      method: 'POST',
      body: { walletAddress: from.address, recipientAddress: to.address, amount: 0.02 },
    });
    assert.equal(during.status, 200, await during.clone().text());
    const { paymentId: missed } = (await during.json()) as { paymentId: string };
    const missedEvents = (await accountEvents()).filter((e) => e.paymentId === missed);
    assert.ok(missedEvents.length >= 1, 'events were recorded while the page was away');
    release();

    await page.locator('.dot.on').waitFor();
    for (const event of missedEvents) await live.locator(`li[data-event-id="${event.id}"]`).waitFor();
    assert.ok(reconnections.length >= 1, 'the page reconnected only after the payment was made');
    assert.ok(lastSeen !== undefined && !missedEvents.some((e) => e.id === lastSeen));
    await page.unroute('**/dashboard/api/payments/live**');
    // Everything the account recorded since the list opened is shown once, newest first (later events,
    // such as a finalisation, may have come on top meanwhile).
    const recorded = (await accountEvents()).map((e) => e.id);
    const since = recorded.slice(recorded.indexOf((await shown()).at(-1) ?? ''));
    for (const id of since) await live.locator(`li[data-event-id="${id}"]`).waitFor();
    const ids = await shown();
    assert.equal(new Set(ids).size, ids.length, `no event shown twice: ${ids.join(' ')}`);
    assert.deepEqual(
      ids.filter((id) => since.includes(id)),
      [...since].reverse(),
    );
    await shot('12-live-list-resumed');
  });

  it('adds a webhook endpoint and shows its signing secret once', async () => {
    await goTo('Webhooks');
    await page.getByLabel('Endpoint URL').fill('http://127.0.0.1:9/hooks');
    await page.getByLabel('payment.confirmed').check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    assert.match((await page.getByTestId('webhook-secret').textContent()) ?? '', /^whsec_/);
    await page.getByRole('button', { name: 'Show deliveries' }).click();
    await page.getByRole('table', { name: /Delivery log/ }).waitFor();
    await shot('10-webhooks');
  });

  it('disables an endpoint, shows it disabled with why, and enables it again', async () => {
    await goTo('Webhooks');
    await page.getByRole('button', { name: 'Disable' }).click();
    const notice = page.getByTestId('webhook-disabled');
    assert.match((await notice.textContent()) ?? '', /^Disabled .*: disabled by its account\./);
    await shot('10b-webhook-disabled');
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('button', { name: 'Disable' }).waitFor();
    assert.equal(await notice.count(), 0);
  });

  it('changes the password: the current one is required, other sessions end, this one stays', async () => {
    const login = (password: string) =>
      fetch(`${server.url}/dashboard/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      });
    const other = await login(PASSWORD);
    assert.equal(other.status, 200);
    const otherCookie = (other.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const sessionOf = (cookie: string) =>
      fetch(`${server.url}/dashboard/api/session`, { headers: { cookie } }).then((r) => r.status);
    assert.equal(await sessionOf(otherCookie), 200);

    await goTo('Password');
    const newPassword = 'an even longer password';
    await page.getByLabel('Current password').fill('not the password');
    await page.getByLabel('New password', { exact: true }).fill(newPassword);
    await page.getByLabel('New password again').fill(newPassword);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('alert').getByText('currentPassword is not your current password').waitFor();
    await shot('13-password-wrong-current');
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').getByText('Password changed. Other sessions were logged out.').waitFor();
    await shot('14-password-changed');

    assert.equal(await sessionOf(otherCookie), 401, 'the other session ended');
    assert.equal((await login(PASSWORD)).status, 401, 'the old password no longer works');
    // This browser is still in, with a working CSRF token: it can change things.
    await goTo('API Keys');
    await page.getByLabel('Key name').fill('after the change');
    await page.getByRole('button', { name: 'Generate key' }).click();
    assert.match((await page.getByTestId('new-key').textContent()) ?? '', /^g402_sk_/);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(newPassword);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
  });

  it('stays logged in and says so when the log-out does not reach the gateway; the next one ends the session', async () => {
    await page.route('**/dashboard/api/logout', (route) => route.abort('connectionrefused'));
    await page.getByRole('button', { name: 'Log out' }).click();
    await page
      .getByRole('alert')
      .getByText('Log-out failed, you are still logged in: The gateway cannot be reached. Try again.')
      .waitFor();
    await shot('15-log-out-failed');
    // What the page says is true: the session is still open.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    await page.unroute('**/dashboard/api/logout');

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
  });
});
