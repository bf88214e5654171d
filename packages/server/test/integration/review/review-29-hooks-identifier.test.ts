import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { generatePaymentId, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { type FacilitatorHooks, loadConfig, type RunningServer, startServer } from '../../../src/index.ts';
import { createLogger } from '../../../src/server.ts';
import { stockPayload } from '../../support/x402-buyer.ts';

const ANVIL = 'eip155:31337';

/** Review of #29: a facilitator hook that fails once, and the payment identifier of the payload. */
describe('review-29: a failing facilitator hook and payment identifiers', () => {
  let server: RunningServer;
  let dataDir: string;
  let key: string;
  let usdc: string;
  let payTo: string;
  let hookFails = true;
  const hooks: FacilitatorHooks = {
    onBeforeSettle: () => {
      if (hookFails) throw new Error('the sanctions list is unreachable');
      return undefined;
    },
  };

  async function api(method: 'GET' | 'POST', path: string, body?: object) {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the test reads the answer's fields as it checks them
    return { status: res.status, body: (await res.json()) as any };
  }

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'gate402-review-hooks-'));
    const config = loadConfig({
      PORT: '0',
      LOCALNET_PORT: '0',
      ANVIL_PORT: '0',
      LOCALNET_SLOT_MS: '20',
      DATA_DIR: dataDir,
      GATE402_DEMO: 'false',
      LOG_LEVEL: 'warn',
    });
    const quiet = new Writable({ write: (_c, _e, done) => done() });
    server = await startServer(config, createLogger(config, quiet), { facilitatorHooks: hooks });
    const account = await server.services.accounts.createAccount({ name: 'seller', plan: 'premium' });
    key = (await server.services.accounts.createKey(account.id, 'test')).key;
    const networks = (await api('GET', '/networks')).body as {
      networks: { id: string; tokens: { symbol: string; address: string }[] }[];
    };
    usdc =
      networks.networks.find((n) => n.id === ANVIL)?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    payTo = (await api('POST', '/wallets', { chain: 'evm' })).body.address;
  });
  after(async () => {
    await server?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a settle a throwing onBeforeSettle refused is settled when retried with the same identifier once the hook works', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    for (const body of [
      { address: buyer.address, amount: 1, token: 'USDC' },
      { address: buyer.address, amount: 0.01 },
    ]) {
      assert.equal((await api('POST', '/faucet', body)).status, 200);
    }
    const requirements: PaymentRequirements = {
      scheme: 'exact',
      network: ANVIL,
      asset: usdc,
      amount: '20000',
      payTo,
      maxTimeoutSeconds: 60,
      extra: { name: 'USD Coin', version: '2' },
    };
    const payload = await stockPayload(new EvmBuyerScheme(buyer), requirements);
    const body = {
      x402Version: 2,
      paymentPayload: {
        ...payload,
        extensions: { [PAYMENT_IDENTIFIER]: { info: { id: generatePaymentId() } } },
      },
      paymentRequirements: requirements,
    };
    const first = await api('POST', '/facilitator/settle', body);
    assert.equal(first.body.errorReason, 'unexpected_settle_error', JSON.stringify(first.body));
    hookFails = false;
    const retried = await api('POST', '/facilitator/settle', body);
    assert.equal(retried.body.success, true, JSON.stringify(retried.body));
  });
});
