import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * Review of #28 (spend policies): `allowedHosts` is judged against the `resource` the caller writes in
 * its own request. On POST /payment/send that is a free label: an agent whose policy allows only
 * api.example.com names that host as the resource and pays any recipient it likes. The policy an
 * operator reads as "this key only pays api.example.com" bounds nothing where the gateway cannot tie
 * the payment to the host (the same holds for POST /payment/x402, whose challenge the caller supplies).
 */
describe('review #28: allowedHosts against a caller-written resource', { timeout: 120_000 }, () => {
  let chain: TestChain;
  let gw: TestGateway;
  let buyer: { key: string; accountId: string; wallet: string };

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    const caller = await gw.newCaller('standard');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body
      .address as string;
    buyer = { ...caller, wallet };
    assert.equal(
      (await callAs(gw, buyer.key, 'POST', '/faucet', { address: wallet, amount: 1 })).status,
      200,
    );
    const at = Date.now();
    await gw.store.spending.putPolicy({
      accountId: buyer.accountId,
      keyId: null,
      limits: null,
      allowedRecipients: null,
      allowedHosts: ['api.example.com'],
      allowedNetworks: null,
      expiresAt: null,
      createdAt: at,
      updatedAt: at,
    });
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  it('a send to an arbitrary recipient is not allowed by naming the allowed host as its resource', {
    todo: 'open: allowedHosts binds the resource the caller names; docs/spend-policies.md says to use allowedRecipients',
  }, async () => {
    const anyone = (await generateKeyPairSigner()).address;
    const res = await callAs(gw, buyer.key, 'POST', '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: anyone,
      amount: 0.01,
      resource: 'https://api.example.com/report',
    });
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'SPEND_NOT_ALLOWED');
  });
});
