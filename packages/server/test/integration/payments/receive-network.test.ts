import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { newParty, type Party } from '../../support/party.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { svmExactRequirements, svmPayload } from '../../support/x402-buyer.ts';

/**
 * POST /payment/receive with `network`: a seller whose wallet address is valid on several networks of one
 * family (two Solana clusters here; any EVM address on every EVM chain) names the one it sells on, and a
 * payment on another is refused before its proof is consumed, so the buyer can still be served for it
 * where it was meant for.
 */
describe('POST /payment/receive with network: a payment on another network is refused, unconsumed', () => {
  let first: TestChain;
  let second: TestChain;
  let gw: TestGateway;
  let buyer: Party;
  let seller: Party;

  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);

  before(async () => {
    [first, second] = await Promise.all([startTestChain(), startTestChain()]);
    assert.notEqual(first.adapter.info.id, second.adapter.info.id, 'two clusters, two network ids');
    gw = await startTestGateway({ networks: new NetworkRegistry([first.adapter, second.adapter]) });
    await gw.services.facilitator.start();
    buyer = await newParty(gw, 'solana', {
      fund: (wallet) => first.adapter.faucet?.fundNative(wallet, 2_000_000_000n),
    });
    // Premium: it also asks the facilitator which fee payer an x402 payment names.
    seller = await newParty(gw, 'solana', { plan: 'premium' });
  });
  after(async () => {
    await gw?.close();
    await first?.close();
    await second?.close();
  });

  it('refuses a gate402 proof of the first network when the second is asked, then accepts it for the first', async () => {
    const sent = await api(buyer.key, 'POST', '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.01,
      network: first.adapter.info.id,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = { walletAddress: seller.wallet, paymentProof: sent.body.paymentProof, expectedAmount: 0.01 };

    const elsewhere = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      network: second.adapter.info.id,
    });
    assert.equal(elsewhere.status, 422, JSON.stringify(elsewhere.body));
    assert.equal(elsewhere.body.error.code, 'INVALID_PAYMENT_PROOF');
    assert.equal(elsewhere.body.error.details.paymentProof, 'network_mismatch');

    for (const [network, details] of [
      ['solana:nowhere', { network: 'is not a configured network; see GET /networks' }],
      ['eip155:1', { network: 'is not a configured network; see GET /networks' }],
    ] as const) {
      const refused = await api(seller.key, 'POST', '/payment/receive', { ...body, network });
      assert.equal(refused.status, 400, network);
      assert.equal(refused.body.error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(refused.body.error.details, details);
    }

    const received = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      network: first.adapter.info.id,
    });
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.equal(received.body.network, first.adapter.info.id);
    // Named again (a price naming no network is the default network's, which the next test holds).
    const again = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      network: first.adapter.info.id,
    });
    assert.equal(again.body.error?.details?.paymentProof, 'already_used');
  });

  it('pins a price that names no network to the default network of the wallet family: a proof of the other is refused network_mismatch, unconsumed', async () => {
    // An address is valid on every network of its family: without the pin, a price of 0.01 (native) was
    // paid as well with the other cluster's SOL (a testnet's free coin, next to a mainnet) as the seller's.
    const listed = await api(seller.key, 'GET', '/networks');
    const home = listed.body.networks.find(
      (n: { family: string; isDefault: boolean }) => n.family === 'solana' && n.isDefault,
    ).id;
    const away = home === first.adapter.info.id ? second : first;
    assert.notEqual(away.adapter.info.id, home);
    await away.adapter.faucet?.fundNative(buyer.wallet, 1_000_000_000n);
    const sent = await api(buyer.key, 'POST', '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.01,
      network: away.adapter.info.id,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = { walletAddress: seller.wallet, paymentProof: sent.body.paymentProof, expectedAmount: 0.01 };
    for (const route of ['/payment/receive', '/transaction/receive']) {
      const refused = await api(seller.key, 'POST', route, body);
      assert.equal(refused.status, 422, `${route}: ${JSON.stringify(refused.body)}`);
      assert.deepEqual(
        [refused.body.error.code, refused.body.error.details.paymentProof],
        ['INVALID_PAYMENT_PROOF', 'network_mismatch'],
      );
    }
    const verified = await api(seller.key, 'POST', '/v1/payments/verify', {
      payment_proof: Buffer.from(sent.body.paymentProof).toString('base64'),
      amount: 10_000_000,
      recipient: seller.wallet,
    });
    assert.deepEqual([verified.body.verified, verified.body.reason], [false, 'network_mismatch']);
    // Not consumed: the seller that sells on that network is paid by it.
    const received = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      network: away.adapter.info.id,
    });
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.equal(received.body.network, away.adapter.info.id);
  });

  it('refuses an x402 payment of the first network when the second is asked, before it is settled', async () => {
    const supported = await api(seller.key, 'GET', '/facilitator/supported');
    const feePayer = supported.body.kinds.find((k: { network: string }) => k.network === SOLANA_DEVNET_ID)
      .extra.feePayer as string;
    const payer = await generateKeyPairSigner();
    // The buyer's USDC, and the seller's token account it pays into, on the first cluster.
    for (const address of [payer.address, seller.wallet]) {
      const funded = await api(seller.key, 'POST', '/faucet', {
        address,
        amount: 1,
        token: 'USDC',
        network: first.adapter.info.id,
      });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    // A stock @x402/svm buyer pays on devnet's id, which the first (embedded) cluster answers to.
    const requirements = svmExactRequirements(first, { amount: '10000', payTo: seller.wallet, feePayer });
    const header = encodePaymentSignatureHeader(await svmPayload(first, payer, requirements));
    const body = { walletAddress: seller.wallet, paymentProof: header, expectedAmount: 0.01 };

    const elsewhere = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      network: second.adapter.info.id,
    });
    assert.equal(elsewhere.status, 422, JSON.stringify(elsewhere.body));
    assert.equal(elsewhere.body.error.details.paymentProof, 'network_mismatch');

    // The price is in USDC (x402 exact pays tokens); the refusal above came first, whatever the asset.
    const received = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      network: first.adapter.info.id,
      asset: 'USDC',
    });
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.equal(received.body.network, first.adapter.info.id);
  });
});
