import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { declareErc20ApprovalGasSponsoringExtension } from '@x402/extensions';
import { type Address, createPublicClient, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { anvilEndpoints } from '../../../src/chains/evm/embedded-evm.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { feeDayOf } from '../../../src/domain/sponsored-fees.ts';
import { callAs } from '../../support/api-caller.ts';
import { tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/**
 * Review (session 17) of erc20ApprovalGasSponsoring in the built-in facilitator (1d2b870, b6cb27e): the
 * funding transfer is mined BEFORE the buyer's approval is broadcast (runApprovalStep), so the buyer —
 * who holds its own key — spends the funded ETH under the approval's nonce first (here: sends it to
 * another address). The approval can then never land, the settlement is sent anyway and reverts, the
 * seller's fee budget is charged the funding and both fees, and the buyer keeps the funding. Repeatable
 * with a fresh approval at each next nonce: a buyer holding the token (never paying it) drains the fee
 * payer and exhausts any seller's daily fee budget (its other buyers then get FEE_BUDGET_EXCEEDED).
 */
describe('review-session17: a buyer takes the gas funding of its approval and never approves', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let network: `eip155:${string}`;
  let usdc: Address;
  let chainId: number;
  let seller: { key: string; accountId: string; evm: Address };
  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    chainId = Number(network.slice('eip155:'.length));
    gw = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: 400,
      storage: tempSqlite(),
    });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      evm: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it("the facilitator's funding can only be spent on the buyer's approval", {
    todo: 'facilitator erc20ApprovalGasSponsoring (sponsored-approval-step.ts:runApprovalStep, sponsored-approval-draft.ts:sponsoredApprovalDraft): the funding transfer (gas limit x 3x max fee, up to 100k gas) is mined before the approval is broadcast, so the buyer replaces the approval (same nonce) with a transfer of the funded ETH to itself; the approval is superseded, the settlement is still sent and reverts; the seller budget pays funding + 2 fees, the buyer keeps ~the funding; repeatable per buyer nonce -> fee-payer drain / seller fee-budget DoS. Fix: fund only when the approval is sure to follow (e.g. a per-payer/per-seller sponsoring cap, fund gasUsed*baseFee not limit*maxFee, refuse payers whose funded approvals were superseded before; on supersede burn the settlement nonce with a 0-value self-transfer instead of a reverting settle)',
  }, async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const funded = await callAs(gw, seller.key, 'POST', '/faucet', {
      address: buyer.address,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    const requirements: PaymentRequirements = {
      scheme: 'exact',
      network,
      asset: usdc,
      amount: '20000',
      payTo: seller.evm,
      maxTimeoutSeconds: 60,
      extra: { assetTransferMethod: 'permit2', name: 'USD Coin', version: '2' },
    };
    // The stock buyer's payload: Permit2 permit + its signed approve(Permit2, max) at nonce 0.
    const payload = await x402Client
      .fromConfig({
        schemes: [{ network, client: new EvmBuyerScheme(buyer, { rpcUrl: evm.anvil.rpcUrl }) }],
        spendControls: false,
      })
      .createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://shop.example/r' },
        accepts: [requirements],
        extensions: declareErc20ApprovalGasSponsoringExtension(),
      });
    const anvil = createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined));
    const feeDay = feeDayOf(Date.now());
    const budgetBefore = await gw.store.sponsoredFees.spent(seller.accountId, network, feeDay);
    try {
      await anvil.setAutomine(false);
      const pending = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
      assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
      // The funding is mined; the buyer's approval is not broadcast yet.
      await anvil.mine({ blocks: 1 });
      const gift = await chainClient().getBalance({ address: buyer.address });
      assert.ok(gift > 0n, 'the facilitator funded the buyer');
      // The buyer spends it under the approval's nonce before the approval is sent.
      const fees = await chainClient().estimateFeesPerGas();
      const tip = fees.maxPriorityFeePerGas * 2n;
      const maxFee = fees.maxFeePerGas + tip;
      const steal = await buyer.signTransaction({
        type: 'eip1559',
        chainId,
        to: thief,
        value: gift - 21_000n * maxFee,
        gas: 21_000n,
        maxFeePerGas: maxFee,
        maxPriorityFeePerGas: tip,
        nonce: 0,
      });
      await chainClient().request({ method: 'eth_sendRawTransaction', params: [steal] });
      await anvil.mine({ blocks: 1 });
    } finally {
      await anvil.setAutomine(true);
    }
    // The facilitator goes on (a retry / the finisher): the approval is superseded.
    for (let i = 0; i < 10; i++) {
      const again = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
      if (again.errorReason !== 'settlement_pending') break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const stolen = await chainClient().getBalance({ address: thief });
    const budgetAfter = await gw.store.sponsoredFees.spent(seller.accountId, network, feeDay);
    const buyerUsdc = await chainClient().readContract({
      address: usdc,
      abi: [
        {
          type: 'function',
          name: 'balanceOf',
          stateMutability: 'view',
          inputs: [{ type: 'address' }],
          outputs: [{ type: 'uint256' }],
        },
      ],
      functionName: 'balanceOf',
      args: [buyer.address],
    });
    assert.deepEqual(
      { stolen, buyerPaid: 1_000_000n - buyerUsdc, budgetCharged: budgetAfter - budgetBefore > 0n },
      { stolen: 0n, buyerPaid: 0n, budgetCharged: false },
      `the buyer took ${stolen} wei of the facilitator's funding, paid ${1_000_000n - buyerUsdc} USDC units, and the seller's fee budget was charged ${budgetAfter - budgetBefore} wei`,
    );
  });
});
