import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Gate402Client, Gate402Error } from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';

/**
 * The SDK's export download and account summary against the real gateway (SQLite, the embedded
 * localnet): a payment made through the SDK comes back in the CSV streamed to the caller and in the
 * summary's figures; a bad date is the gateway's error, thrown as Gate402Error naming the field.
 */
describe('SDK: exportPayments and accountSummary', () => {
  let gateway: InProcessGateway;
  let sdk: Gate402Client;
  let buyer: string;
  let seller: string;

  before(async () => {
    gateway = await startGateway();
    sdk = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    buyer = (await sdk.createWallet({ chain: 'solana' })).address;
    seller = (await sdk.createWallet({ chain: 'solana' })).address;
    await sdk.faucet({ address: buyer, amount: 1 });
    await sdk.sendPayment({
      walletAddress: buyer,
      recipientAddress: seller,
      amount: 0.25,
      resource: 'https://x.test/r',
    });
  });
  after(() => gateway?.close());

  it('streams the CSV of the account’s payments, which holds the payment sent', async () => {
    const body = await sdk.exportPayments({ format: 'csv' });
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>)
      text += decoder.decode(chunk, { stream: true });
    const lines = text.trim().split(/\r\n/);
    assert.ok(lines.length >= 2, text);
    assert.match(lines.slice(1).join('\n'), /0\.25/);
    assert.match(lines.slice(1).join('\n'), new RegExp(seller));
  });

  it('throws the gateway’s refusal of a bad date as Gate402Error naming the field', async () => {
    await assert.rejects(sdk.exportPayments({ from: 'yesterday-ish' }), (error: unknown) => {
      assert.ok(error instanceof Gate402Error);
      assert.equal(error.status, 400);
      assert.equal(error.code, 'INVALID_PARAMETERS');
      assert.ok(error.details !== undefined && 'from' in error.details, JSON.stringify(error.details));
      return true;
    });
  });

  it('reads the summary: 0.25 SOL sent in one payment', async () => {
    const summary = await sdk.accountSummary({ days: 1 });
    const sol = summary.assets.find((a) => a.symbol === 'SOL');
    assert.equal(sol?.sent.amount, '0.25');
    assert.equal(sol?.sent.count, 1);
  });
});
