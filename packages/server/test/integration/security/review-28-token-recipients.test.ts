import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * Review of #28 (token sends): a token sent to an address that can never move it is lost for good. On
 * Solana the gateway pays the associated token account of whatever `recipientAddress` names, so a
 * recipient that is the mint itself, or a token account (someone's USDC account pasted instead of their
 * wallet), gets an associated token account no key can ever sign for. On EVM an ERC-20 sent to the token
 * contract itself is stuck there. Each is refused INVALID_RECIPIENT before anything is signed or recorded.
 */
describe('review #28: token sends to addresses that can never spend them', { timeout: 180_000 }, () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let buyer: { key: string; solana: string; evm: string };
  let other: { key: string; solana: string };
  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]) });
    const wallet = async (key: string, family: string) =>
      (await api(key, 'POST', '/wallets', { chain: family })).body.address as string;
    const b = await gw.newCaller('standard');
    buyer = { key: b.key, solana: await wallet(b.key, 'solana'), evm: await wallet(b.key, 'evm') };
    const o = await gw.newCaller('standard');
    other = { key: o.key, solana: await wallet(o.key, 'solana') };
    for (const address of [buyer.solana, buyer.evm]) {
      assert.equal((await api(buyer.key, 'POST', '/faucet', { address, amount: 1 })).status, 200);
      const funded = await api(buyer.key, 'POST', '/faucet', { address, amount: 10, token: 'USDC' });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    // The other wallet's USDC token account exists (a first mint opens it).
    await api(other.key, 'POST', '/faucet', { address: other.solana, amount: 1, token: 'USDC' });
  });
  after(async () => {
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
  });

  const sentCount = async (wallet: string) =>
    (await api(buyer.key, 'GET', `/payment/history/${wallet}?type=sent`)).body.total as number;

  const refused = async (wallet: string, recipientAddress: string) => {
    const before = await sentCount(wallet);
    const res = await api(buyer.key, 'POST', '/payment/send', {
      walletAddress: wallet,
      recipientAddress,
      amount: 1,
      asset: 'USDC',
    });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'INVALID_RECIPIENT', JSON.stringify(res.body));
    assert.ok(res.body.error.details.recipientAddress, JSON.stringify(res.body));
    assert.equal(await sentCount(wallet), before, 'nothing is recorded');
  };

  it('Solana: the USDC mint itself as the recipient is refused', async () => {
    await refused(buyer.solana, chain.localnet.usdcMint.address);
  });

  it('Solana: POST /transaction/send (local mode) refuses the mint as the recipient too', async () => {
    const res = await api(buyer.key, 'POST', '/transaction/send', {
      walletAddress: buyer.solana,
      recipientAddress: chain.localnet.usdcMint.address,
      amount: 1,
      asset: 'USDC',
    });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'INVALID_RECIPIENT', JSON.stringify(res.body));
  });

  it("Solana: a token account (another wallet's USDC account) as the recipient is refused", async () => {
    const accounts = await chain.adapter.getTokenAccounts(other.solana);
    const account = accounts.find((a) => a.mint === chain.localnet.usdcMint.address);
    assert.ok(
      account,
      JSON.stringify(accounts, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
    );
    await refused(buyer.solana, account.address);
  });

  it('EVM: the ERC-20 contract itself as the recipient is refused', async () => {
    await refused(buyer.evm, evm.usdc.address);
  });
});
