import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { GatewayError } from '../../../src/domain/gateway-error.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * An Idempotency-Key is unique per account across every payment. The HTTP layer answers a key reused
 * on another route as IDEMPOTENCY_KEY_REUSED while it remembers the first answer (24 h, or until a 503
 * freed it); past that, each spending service finds the earlier payment itself. A payment of another
 * kind under the key must be refused the same way, before anything is signed: a custodial send's key
 * given to an x402 payment signed and then failed on the store's unique index (a 500), and given to a
 * local-mode build it did the same; a send retried with an x402 payment's key answered that payment.
 */
describe('an Idempotency-Key of one kind of payment given to another', { timeout: 120_000 }, () => {
  let chain: TestChain;
  let gw: TestGateway;
  let caller: { accountId: string; key: string };
  let wallet: string;
  const KEY = 'idem-across-kinds-1';

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    caller = await gw.newCaller('standard');
    wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    assert.equal(
      (await callAs(gw, caller.key, 'POST', '/faucet', { address: wallet, amount: 1 })).status,
      200,
    );
    const sent = await gw.services.send.send(
      caller.accountId,
      { walletAddress: wallet, recipientAddress: (await generateKeyPairSigner()).address, amount: 0.01 },
      KEY,
    );
    assert.equal(sent.status, 'confirmed');
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  const reused = (error: unknown) =>
    error instanceof GatewayError &&
    error.code === 'IDEMPOTENCY_KEY_REUSED' &&
    error.details?.['Idempotency-Key'] !== undefined;

  it('refuses an x402 payment under a custodial send’s key, before reading the challenge', async () => {
    await assert.rejects(
      gw.services.x402Pay.pay(
        caller.accountId,
        {
          walletAddress: wallet,
          paymentRequired: 'not even a challenge',
          resource: 'https://seller.example/r',
          maxAmount: {},
        },
        KEY,
      ),
      reused,
    );
  });

  it('refuses a local-mode build under a custodial send’s key', async () => {
    await assert.rejects(
      gw.services.localSend.build(
        caller.accountId,
        { walletAddress: wallet, recipientAddress: (await generateKeyPairSigner()).address, amount: 0.01 },
        KEY,
      ),
      reused,
    );
  });

  it('still answers a retried send with its own payment, and nothing more was paid', async () => {
    const again = await gw.services.send.send(
      caller.accountId,
      { walletAddress: wallet, recipientAddress: (await generateKeyPairSigner()).address, amount: 0.01 },
      KEY,
    );
    assert.equal(again.status, 'confirmed');
    const history = await callAs(gw, caller.key, 'GET', `/payment/history/${wallet}?type=sent`);
    assert.equal(history.body.total, 1);
  });
});
