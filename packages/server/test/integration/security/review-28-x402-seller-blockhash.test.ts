import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner, getBase58Decoder } from '@solana/kit';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * Review of #28 (POST /payment/x402 on Solana, a hostile seller's challenge).
 *
 * The stock @x402/svm client signs with the blockhash a seller puts in `extra.recentBlockhash` when there
 * is one, instead of asking its own RPC. A blockhash is what binds a Solana transaction to one chain: a
 * seller naming another network's (one where the same custodial address holds a token at the same mint,
 * as the embedded localnet's USDC sits at devnet's address) gets a transfer it can land there, while the
 * gateway watches and expires it here and frees the spend it held. The gateway should sign only with a
 * blockhash of the chain it pays on.
 *
 * And an option naming the network by the id GET /networks gives it (the localnet's own CAIP-2 id, not
 * the devnet id it answers for) passes every check, then the stock client throws on it: a 500.
 */
describe('review #28: x402 pay on Solana and the seller-given network and blockhash', {
  timeout: 120_000,
}, () => {
  let chain: TestChain;
  let gw: TestGateway;
  let buyer: { key: string; wallet: string };
  const url = 'https://seller.example/report';

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('standard');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body
      .address as string;
    buyer = { key: caller.key, wallet };
    const funded = await callAs(gw, buyer.key, 'POST', '/faucet', {
      address: wallet,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  const pay = async (network: string, extra: Record<string, unknown>) => {
    const challenge = {
      x402Version: 2,
      resource: { url },
      accepts: [
        {
          scheme: 'exact',
          network,
          asset: chain.localnet.usdcMint.address,
          payTo: (await generateKeyPairSigner()).address,
          amount: '10000',
          maxTimeoutSeconds: 60,
          extra: { feePayer: (await generateKeyPairSigner()).address, ...extra },
        },
      ],
    };
    return callAs(gw, buyer.key, 'POST', '/payment/x402', {
      walletAddress: buyer.wallet,
      paymentRequired: Buffer.from(JSON.stringify(challenge)).toString('base64'),
      resource: url,
      maxAmount: { USDC: 1 },
    });
  };

  it('never signs with a blockhash the seller names in extra.recentBlockhash', async () => {
    const foreign = randomBytes(32);
    const res = await pay(SOLANA_DEVNET_ID, { recentBlockhash: getBase58Decoder().decode(foreign) });
    if (res.status !== 200) {
      // Refusing such an option before signing is as good as ignoring its blockhash.
      assert.equal(res.body.error.code, 'PAYMENT_OPTION_REFUSED', JSON.stringify(res.body));
      return;
    }
    const payload = JSON.parse(Buffer.from(res.body.paymentHeader, 'base64').toString('utf8'));
    const wire = Buffer.from(payload.payload.transaction as string, 'base64');
    assert.equal(wire.includes(foreign), false, "the signed transaction carries the seller's blockhash");
  });

  it('an option naming the localnet by its own CAIP-2 id is paid or refused, never a 500', async () => {
    const res = await pay(chain.adapter.info.id, {});
    assert.ok(
      res.status === 200 || res.body.error?.code === 'PAYMENT_OPTION_REFUSED',
      JSON.stringify(res.body),
    );
  });
});
