import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type RunningServer, startServer } from 'gate402';
import { type Browser, chromium, type Page } from 'playwright-core';
import { buildDashboard, isDashboardBuilt } from '../../node/index.ts';

// What every dashboard browser test needs: the gateway as `npm start` runs it, Debian's Chromium through
// playwright-core, a page watched for CSP violations and requests that leave the gateway, and the sign-up
// and API key steps that open each test. One way for every file, so a flag or a step changes in one place.

export const CHROMIUM = '/usr/bin/chromium';
/** Screenshots: packages/dashboard/test-artifacts/ (CI keeps them). */
export const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;
export const PASSWORD = 'a long enough password';
/** The `skip` option of a browser test's describe: a reason without Chromium, else false. */
export const skipWithoutChromium = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: dashboard browser tests skipped`;

/** A gateway on its own temporary DATA_DIR (SQLite, the embedded localnet and anvil), built dashboard. */
export interface DashboardGateway {
  readonly server: RunningServer;
  close(): Promise<void>;
}

export async function startDashboardGateway(
  name: string,
  env: Readonly<Record<string, string>> = {},
): Promise<DashboardGateway> {
  mkdirSync(ARTIFACTS, { recursive: true });
  if (!isDashboardBuilt()) await buildDashboard();
  const dataDir = mkdtempSync(join(tmpdir(), `gate402-${name}-`));
  const server = await startServer(
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
      ...env,
    }),
  );
  return {
    server,
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
}

/** A page and what it did that the dashboard must never do. */
export interface WatchedPage {
  readonly page: Page;
  /** Console messages of Content-Security-Policy refusals. */
  readonly cspViolations: string[];
  /** Requests to anywhere but the gateway (data: URLs aside). */
  readonly foreignRequests: string[];
  /** Saves a full-page screenshot as ARTIFACTS/<name>.png. */
  shot(name: string): Promise<Buffer>;
}

export async function openPage(
  browser: Browser,
  gatewayUrl: string,
  viewport: { width: number; height: number } = { width: 1200, height: 800 },
): Promise<WatchedPage> {
  const page = await browser.newPage({ viewport });
  // A shared, busy machine: generous, but a broken step still fails long before the test runner's limit.
  page.setDefaultTimeout(20_000);
  const cspViolations: string[] = [];
  const foreignRequests: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) cspViolations.push(message.text());
  });
  const origin = new URL(gatewayUrl).origin;
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.origin !== origin && url.protocol !== 'data:') foreignRequests.push(request.url());
  });
  return {
    page,
    cspViolations,
    foreignRequests,
    shot: (name) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true }),
  };
}

/** Signs a new person up from the log-in page; resolves on the Home page. */
export async function signUp(page: Page, gatewayUrl: string, email: string): Promise<void> {
  await page.goto(`${gatewayUrl}/dashboard`);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
}

/** Opens a section from the navigation and waits for its heading. */
export async function goTo(page: Page, section: string): Promise<void> {
  await page
    .getByRole('navigation', { name: 'Dashboard sections' })
    .getByRole('link', { name: section })
    .click();
  await page.getByRole('heading', { level: 1, name: section }).waitFor();
}

/** Generates an API key on the API Keys page and returns it (shown once). */
export async function createApiKey(page: Page, name: string): Promise<string> {
  await page
    .getByRole('navigation', { name: 'Dashboard sections' })
    .getByRole('link', { name: 'API Keys' })
    .click();
  await page.getByLabel('Key name').fill(name);
  await page.getByRole('button', { name: 'Generate key' }).click();
  const key = (await page.getByTestId('new-key').textContent()) ?? '';
  await page.getByRole('button', { name: 'I have stored it' }).click();
  return key;
}

/** Calls the public API with `key` and returns the JSON answer, failing the test on anything but 200. */
export async function callApi(
  gatewayUrl: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${gatewayUrl}${path}`, {
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
}
