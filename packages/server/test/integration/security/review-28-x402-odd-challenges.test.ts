import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { getAddress } from 'viem';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * Review of #28 (POST /payment/x402): challenges a seller may send that the stock client scheme cannot
 * sign. Each is answered as bad input (a refused option, 422 PAYMENT_OPTION_REFUSED naming it, or 400),
 * never a 500 after the wallet's key was opened.
 */
describe('review #28: x402 challenges the stock client cannot sign', { timeout: 120_000 }, () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let buyer: { key: string; solana: string; evm: string };
  const url = 'https://seller.example/report';

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]) });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('standard');
    const wallet = async (family: string) =>
      (await callAs(gw, caller.key, 'POST', '/wallets', { chain: family })).body.address as string;
    buyer = { key: caller.key, solana: await wallet('solana'), evm: await wallet('evm') };
    for (const address of [buyer.solana, buyer.evm]) {
      const funded = await callAs(gw, buyer.key, 'POST', '/faucet', { address, amount: 1, token: 'USDC' });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
  });
  after(async () => {
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
  });

  const pay = (wallet: string, challenge: object, body?: boolean) =>
    callAs(gw, buyer.key, 'POST', '/payment/x402', {
      walletAddress: wallet,
      ...(body === true
        ? { paymentRequiredBody: challenge }
        : { paymentRequired: Buffer.from(JSON.stringify(challenge)).toString('base64') }),
      resource: url,
      maxAmount: { USDC: 1 },
    });

  const notA500 = (res: { status: number; body: { error?: { code: string } } }) => {
    assert.notEqual(res.status, 500, JSON.stringify(res.body));
    if (res.status !== 200) assert.ok([400, 403, 422].includes(res.status), JSON.stringify(res.body));
  };

  it('Solana: an extra.memo longer than the client allows', async () => {
    const res = await pay(buyer.solana, {
      x402Version: 2,
      resource: { url },
      accepts: [
        {
          scheme: 'exact',
          network: SOLANA_DEVNET_ID,
          asset: chain.localnet.usdcMint.address,
          payTo: (await generateKeyPairSigner()).address,
          amount: '10000',
          maxTimeoutSeconds: 60,
          extra: { feePayer: (await generateKeyPairSigner()).address, memo: 'x'.repeat(1000) },
        },
      ],
    });
    notA500(res);
  });

  it('EVM: a v1 challenge naming anvil by its CAIP-2 id', async () => {
    const res = await pay(
      buyer.evm,
      {
        x402Version: 1,
        accepts: [
          {
            scheme: 'exact',
            network: evm.adapter.info.id,
            asset: evm.usdc.address,
            payTo: getAddress(`0x${randomBytes(20).toString('hex')}`),
            maxAmountRequired: '10000',
            resource: url,
            description: '',
            mimeType: 'application/json',
            maxTimeoutSeconds: 60,
            extra: { name: 'USD Coin', version: '2' },
          },
        ],
      },
      true,
    );
    notA500(res);
  });

  it('Solana: a v1 challenge naming the localnet by its own CAIP-2 id', async () => {
    const res = await pay(
      buyer.solana,
      {
        x402Version: 1,
        accepts: [
          {
            scheme: 'exact',
            network: chain.adapter.info.id,
            asset: chain.localnet.usdcMint.address,
            payTo: (await generateKeyPairSigner()).address,
            maxAmountRequired: '10000',
            resource: url,
            description: '',
            mimeType: 'application/json',
            maxTimeoutSeconds: 60,
            extra: { feePayer: (await generateKeyPairSigner()).address },
          },
        ],
      },
      true,
    );
    notA500(res);
  });
});
