import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import type { SpendPolicyRecord } from '../../../src/domain/records/spend-policy-records.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

const LAMPORTS_PER_SOL = 1_000_000_000n;

/**
 * Review of #28 (spend policies): `allowedHosts` was judged against the `resource` the caller writes in
 * its own request. On POST /payment/send that is a free label: an agent whose policy allows only
 * api.example.com named that host as the resource and paid any recipient it liked. Now a policy with
 * `allowedHosts` refuses a recipient the request names unless the same policy's `allowedRecipients`
 * lists it (POST /payment/send, POST /transaction/send; POST /payment/x402 in x402-pay.test.ts, whose
 * PaymentRequired the caller brings too). A refund pays back the payer the gateway recorded, and is
 * judged by the host of what it refunds.
 */
describe('review #28: allowedHosts against a caller-written resource', { timeout: 180_000 }, () => {
  let chain: TestChain;
  let gw: TestGateway;

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  /** A new account with a custodial Solana wallet holding 1 SOL, bound by `policy` when one is given. */
  async function spender(policy?: Partial<SpendPolicyRecord>) {
    const caller = await gw.newCaller('standard');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body
      .address as string;
    const funded = await callAs(gw, caller.key, 'POST', '/faucet', { address: wallet, amount: 1 });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    if (policy !== undefined) {
      const at = Date.now();
      await gw.store.spending.putPolicy({
        accountId: caller.accountId,
        keyId: null,
        limits: null,
        allowedRecipients: null,
        allowedHosts: null,
        allowedNetworks: null,
        expiresAt: null,
        createdAt: at,
        updatedAt: at,
        ...policy,
      });
    }
    return { ...caller, wallet };
  }
  const sentTotal = async (s: { key: string; wallet: string }) =>
    (await callAs(gw, s.key, 'GET', `/payment/history/${s.wallet}?type=sent`)).body.total as number;

  it('a send to an arbitrary recipient is not allowed by naming the allowed host as its resource', async () => {
    const agent = await spender({ allowedHosts: ['api.example.com'] });
    const anyone = (await generateKeyPairSigner()).address;
    const body = {
      walletAddress: agent.wallet,
      recipientAddress: anyone,
      amount: 0.01,
      resource: 'https://api.example.com/report',
    };
    for (const path of ['/payment/send', '/transaction/send']) {
      const res = await callAs(gw, agent.key, 'POST', path, body);
      assert.equal(res.status, 403, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'SPEND_NOT_ALLOWED');
      assert.deepEqual(res.body.error.details, { limit: 'allowedHosts', policy: 'account' });
      assert.match(res.body.error.message, /allowedRecipients/);
    }
    assert.equal(await sentTotal(agent), 0, 'nothing recorded');
    assert.equal(await chain.adapter.getBalance(anyone), 0n, 'nothing paid');
  });

  it('a send to a recipient the policy lists, for a resource on an allowed host, is paid; both lists must allow it', async () => {
    const payee = (await generateKeyPairSigner()).address;
    const agent = await spender({ allowedHosts: ['api.example.com'], allowedRecipients: [payee] });
    const send = (recipientAddress: string, resource: string) =>
      callAs(gw, agent.key, 'POST', '/payment/send', {
        walletAddress: agent.wallet,
        recipientAddress,
        amount: 0.01,
        resource,
      });
    const paid = await send(payee, 'https://api.example.com/report');
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(await chain.adapter.getBalance(payee), LAMPORTS_PER_SOL / 100n);
    const elsewhere = await send(payee, 'https://other.example/report');
    assert.equal(elsewhere.status, 403, JSON.stringify(elsewhere.body));
    assert.deepEqual(elsewhere.body.error.details, { limit: 'allowedHosts', policy: 'account' });
    const stranger = await send((await generateKeyPairSigner()).address, 'https://api.example.com/report');
    assert.equal(stranger.status, 403, JSON.stringify(stranger.body));
    assert.deepEqual(stranger.body.error.details, { limit: 'allowedRecipients', policy: 'account' });
    assert.equal(await sentTotal(agent), 1);
  });

  it('a refund under an allowedHosts policy pays the payer back; a send naming the same payer is refused', async () => {
    const buyer = await spender();
    const seller = await spender({ allowedHosts: ['shop.example'] });
    const resource = 'https://shop.example/item';
    const sent = await callAs(gw, buyer.key, 'POST', '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.01,
      resource,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const received = await callAs(gw, seller.key, 'POST', '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: sent.body.paymentProof,
      expectedAmount: 0.01,
      resource,
    });
    assert.equal(received.status, 200, JSON.stringify(received.body));
    // The payee of a refund is the payer the gateway recorded, not one the request names.
    const refund = await callAs(gw, seller.key, 'POST', `/payment/refund/${received.body.paymentId}`, {});
    assert.equal(refund.status, 200, JSON.stringify(refund.body));
    assert.equal(refund.body.recipient, buyer.wallet);
    const direct = await callAs(gw, seller.key, 'POST', '/payment/send', {
      walletAddress: seller.wallet,
      recipientAddress: buyer.wallet,
      amount: 0.01,
      resource,
    });
    assert.equal(direct.status, 403, JSON.stringify(direct.body));
    assert.deepEqual(direct.body.error.details, { limit: 'allowedHosts', policy: 'account' });
  });
});
