import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import express from 'express';
import { expressPaywall } from '../../src/express.ts';
import { CHROMIUM, paywallBrowserSuite } from '../support/paywall-browser.ts';

const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: paywall browser tests skipped`;

/**
 * What the browser paywall page shows once paid, by the purchase's type: JSON and text as text (the
 * other file), HTML in a frame that runs nothing, anything else as a download. Its own file (and gateway)
 * so that each file's browser tests stay well inside the runner's time limit on a loaded machine.
 */
describe('the browser paywall page shows what was bought', { skip }, () => {
  const suite = paywallBrowserSuite();
  const { newPage, injectSolanaWallet, solanaUsdc, walletListed, onlyFrom } = suite;

  it('an HTML purchase is shown in a sandboxed frame whose scripts never run; any other type is offered as a download of its exact bytes', async () => {
    const payTo = (await suite.premium.createWallet({ chain: 'solana' })).address;
    await suite.premium.faucet({ address: payTo, amount: 0.01, token: 'USDC' });
    const protect = expressPaywall(suite.premium).protect({
      price: '0.01',
      payTo,
      exact: { asset: suite.usdcSol, amount: '0.01' },
    });
    const report = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x10, 0x80]);
    const shop = express();
    // The purchased page tries to reach its parent and the network: the sandbox lets it do neither.
    shop.get('/page.html', protect, (_req, res) => {
      res
        .type('html')
        .send(
          '<h1>The secret page</h1><script>parent.gate402Escaped = true; fetch("/page.html?leak=1")</script>',
        );
    });
    shop.get('/report.pdf', protect, (_req, res) => {
      res.type('application/pdf').send(report);
    });
    const server = shop.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    suite.apps.push({ url: '', close: () => new Promise((resolve) => server.close(() => resolve())) });
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const buyer = await generateKeyPairSigner();
    await suite.funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
    const paidBefore = await solanaUsdc(buyer.address);

    const html = await newPage();
    await injectSolanaWallet(html.page, buyer, { value: 'sign' });
    assert.equal((await html.page.goto(`${origin}/page.html`))?.status(), 402);
    await walletListed(html.page, 'Test Solana Wallet', html.problems);
    await html.page.getByRole('button', { name: 'Pay 0.01 USDC' }).click();
    await html.page.getByRole('heading', { name: 'Your purchase' }).waitFor();
    const frame = html.page.locator('iframe[title="The purchased page"]');
    assert.equal(await frame.getAttribute('sandbox'), '', 'sandboxed with no permission at all');
    await html.page
      .frameLocator('iframe[title="The purchased page"]')
      .getByRole('heading', { name: 'The secret page' })
      .waitFor();
    assert.equal(
      await html.page.evaluate('window.gate402Escaped === undefined'),
      true,
      'its script never ran',
    );
    assert.equal(
      html.requests.some((u) => u.searchParams.has('leak')),
      false,
      'the purchased page made no request',
    );
    onlyFrom(html.requests, origin);
    await html.page.close();

    const binary = await newPage();
    await injectSolanaWallet(binary.page, buyer, { value: 'sign' });
    assert.equal((await binary.page.goto(`${origin}/report.pdf`))?.status(), 402);
    await walletListed(binary.page, 'Test Solana Wallet', binary.problems);
    await binary.page.getByRole('button', { name: 'Pay 0.01 USDC' }).click();
    const link = binary.page.getByRole('link', { name: 'Download (application/pdf)' });
    await link.waitFor();
    assert.equal(await link.getAttribute('download'), 'report.pdf');
    const [download] = await Promise.all([binary.page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), 'report.pdf');
    const bytes = readFileSync(await download.path());
    assert.deepEqual(bytes, report, 'the download holds exactly the bytes sold');
    onlyFrom(binary.requests, origin);
    // The browser reports the script it refused to run: the evidence that the sandbox held.
    const sandboxed = (m: string) => /Blocked script execution in 'about:srcdoc'.*sandboxed/.test(m);
    assert.equal(html.problems.filter(sandboxed).length, 1, html.problems.join('\n'));
    assert.deepEqual([...html.problems.filter((m) => !sandboxed(m)), ...binary.problems], []);
    await binary.page.close();

    assert.equal(paidBefore - (await solanaUsdc(buyer.address)), 20_000n, 'two purchases, 0.01 USDC each');
  });
});
