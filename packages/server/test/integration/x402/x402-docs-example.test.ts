import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { runStockX402Example } from '../../../../../docs/examples/x402-stock.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * docs/x402.md's complete example (docs/examples/x402-stock.ts), run as written against a listening
 * gateway on the embedded chains: the stock seller is paid on Solana and on EVM, and the payments are in
 * the books of the account whose key it used.
 */
describe('the stock x402 example of docs/x402.md', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]) });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
  });

  after(async () => {
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  it('pays the @x402/express seller with @x402/fetch through gate402 on both chains', async () => {
    const seller = await gw.newCaller('premium');
    const url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const result = await runStockX402Example(url, seller.key);

    assert.equal(result.solana.status, 200);
    assert.deepEqual(result.solana.body, { report: 'solana' });
    assert.equal(result.solana.settlement.success, true);
    assert.equal(result.solana.settlement.network, SOLANA_DEVNET_ID);
    assert.equal(result.evm.status, 200);
    assert.deepEqual(result.evm.body, { report: 'evm' });
    assert.equal(result.evm.settlement.success, true);
    assert.equal(result.evm.settlement.network, evm.adapter.info.id);

    const { body: wallets } = await callAs(gw, seller.key, 'GET', '/wallets');
    const received: { amount: number; signature: string }[] = [];
    for (const wallet of wallets.wallets as { address: string }[]) {
      const { body } = await callAs(gw, seller.key, 'GET', `/payment/history/${wallet.address}`);
      received.push(...body.payments.filter((p: { type: string }) => p.type === 'received'));
    }
    assert.deepEqual(
      received.map((p) => [p.amount, p.signature]).sort(),
      [
        [0.01, result.solana.settlement.transaction],
        [0.02, result.evm.settlement.transaction],
      ].sort(),
    );
  });
});
