import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { declareErc20ApprovalGasSponsoringExtension } from '@x402/extensions';
import { type Address, createPublicClient, type Hex, http, parseAbi, parseTransaction } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { anvilEndpoints } from '../../../src/chains/evm/embedded-evm.ts';
import {
  MAX_APPROVAL_FEE_MULTIPLE,
  MAX_APPROVAL_GAS,
} from '../../../src/chains/evm/erc20-approval-gas-sponsoring.ts';
import { PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { feeDayOf } from '../../../src/domain/sponsored-fees.ts';
import {
  payerFundingKey,
  unsettledFundings,
} from '../../../src/services/facilitator/approval-funding-limits.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
]);

/**
 * Review (session 17) of erc20ApprovalGasSponsoring in the built-in facilitator (1d2b870, b6cb27e): the
 * funding transfer is mined BEFORE the buyer's approval can be broadcast (a node takes no transaction
 * its sender cannot pay for), so the buyer — who holds its own key — can spend the funded ETH under the
 * approval's nonce first (here: sends it to another address). The approval then never lands. It used to
 * be settled anyway: the settlement reverted, the seller's fee budget paid the funding and both fees, and
 * the buyer could do it again at each next nonce, draining the fee payer and any seller's daily budget.
 *
 * Now: the settlement is sent only once the chain shows the allowance it spends; otherwise its nonce is
 * spent by a 0-value transfer signed with the claim and it fails `permit2_allowance_required` (no
 * reverting settlement, no settlement fee). The buyer keeps at most its one funding — its approval's gas
 * limit at its max fee, itself capped at MAX_APPROVAL_GAS × MAX_APPROVAL_FEE_MULTIPLE × the network's
 * fee — and is never funded again, on any instance; and an account has at most
 * X402_MAX_UNSETTLED_APPROVAL_FUNDINGS (here 1) funded payments a day that did not settle.
 */
describe('review-session17: a buyer takes the gas funding of its approval and never approves', () => {
  let evm: TestEvm;
  let storage: TempStorage;
  const masterKey = new Uint8Array(randomBytes(32));
  let gw: TestGateway;
  let other: TestGateway | undefined;
  let network: `eip155:${string}`;
  let usdc: Address;
  let chainId: number;
  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const anvil = () => createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined));
  const eth = (address: Address) => chainClient().getBalance({ address });
  const tokenBalance = (address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] });
  const feePayer = () => gw.services.facilitator.schemeFor(network)?.signers()[0] as Address;
  const spent = (accountId: string) => gw.store.sponsoredFees.spent(accountId, network, feeDayOf(Date.now()));

  /** A seller account of its own (the unsettled-funding cap is per account) with an EVM wallet. */
  const newSeller = async () => {
    const caller = await gw.newCaller('premium');
    const wallet = await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' });
    return { key: caller.key, accountId: caller.accountId, evm: wallet.body.address as Address };
  };
  type Seller = Awaited<ReturnType<typeof newSeller>>;

  /** A buyer with 1 USDC, no ETH and no allowance to Permit2. */
  const newBuyer = async (seller: Seller) => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await callAs(gw, seller.key, 'POST', '/faucet', {
      address: buyer.address,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    return buyer;
  };
  const requirementsFor = (seller: Seller): PaymentRequirements => ({
    scheme: 'exact',
    network,
    asset: usdc,
    amount: '20000',
    payTo: seller.evm,
    maxTimeoutSeconds: 60,
    extra: { assetTransferMethod: 'permit2', name: 'USD Coin', version: '2' },
  });
  /** The stock buyer's payload: Permit2 permit + its signed approve(Permit2, max) at its current nonce. */
  const stockPayload = (buyer: PrivateKeyAccount, requirements: PaymentRequirements) =>
    x402Client
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
  const approvalOf = (payload: PaymentPayload) => {
    const extension = payload.extensions?.erc20ApprovalGasSponsoring as
      | { info: { signedTransaction: Hex } }
      | undefined;
    assert.ok(extension !== undefined, 'the stock buyer signed an approval transaction');
    return parseTransaction(extension.info.signedTransaction);
  };
  const keyOf = (payload: PaymentPayload, requirements: PaymentRequirements) =>
    gw.services.facilitator.identityOf({
      x402Version: 2,
      scheme: 'exact',
      networkAsSent: network,
      network,
      payload: { ...payload.payload, extensions: payload.extensions },
      requirements: { ...requirements, amount: BigInt(requirements.amount) },
    }) ?? '';
  /** Settles (again while `settlement_pending`) until the facilitator has the last word. */
  const settleToEnd = async (
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    seller: Seller,
    on = gw,
  ) => {
    for (let i = 0; ; i++) {
      const answer = await on.services.facilitator.settle(payload, requirements, seller.accountId);
      if (answer.errorReason !== 'settlement_pending' || i >= 20) return answer;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  /**
   * The attack: the settle is asked with automining off, so the funding is mined in a block of its own
   * before the approval is sent; the buyer then spends the funding under the approval's nonce (to
   * `thief`) with a higher tip. Returns what the fee payer gave.
   */
  const divertFunding = async (
    buyer: PrivateKeyAccount,
    thief: Address,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    seller: Seller,
  ): Promise<bigint> => {
    const client = anvil();
    try {
      await client.setAutomine(false);
      const pending = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
      assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
      await client.mine({ blocks: 1 });
      const gift = await eth(buyer.address);
      assert.ok(gift > 0n, 'the facilitator funded the buyer');
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
        nonce: Number(approvalOf(payload).nonce ?? 0),
      });
      await chainClient().request({ method: 'eth_sendRawTransaction', params: [steal] });
      await client.mine({ blocks: 1 });
      return gift;
    } finally {
      await client.setAutomine(true);
    }
  };

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    chainId = Number(network.slice('eip155:'.length));
    // PostgreSQL when DATABASE_URL is set (the instances' shared storage in production), a SQLite file otherwise.
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    gw = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: 400,
      storage,
      disposeStorage: false,
      masterKey,
      feeBudget: { maxUnsettledApprovalFundings: 1 },
    });
    await gw.services.facilitator.start();
  });

  after(async () => {
    await other?.close();
    await gw?.close();
    await storage?.dispose();
    await evm?.close();
    evm?.dispose();
  });

  it("the buyer diverts at most its one approval's gas funding, and the settlement is never sent to revert", async () => {
    const seller = await newSeller();
    const buyer = await newBuyer(seller);
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const requirements = requirementsFor(seller);
    const payload = await stockPayload(buyer, requirements);
    const approval = approvalOf(payload);
    const budgetBefore = await spent(seller.accountId);
    const feePayerBefore = await eth(feePayer());
    const feePayerNonce = await chainClient().getTransactionCount({ address: feePayer() });
    const network_fee = (await chainClient().estimateFeesPerGas()).maxFeePerGas;

    const gift = await divertFunding(buyer, thief, payload, requirements, seller);
    // The facilitator goes on (a retry of the settle): the approval is superseded.
    const answer = await settleToEnd(payload, requirements, seller);
    assert.deepEqual(
      [answer.success, answer.errorReason],
      [false, 'permit2_allowance_required'],
      JSON.stringify(answer),
    );

    // What the buyer took: at most the funding, which is exactly its approval's gas limit at its max
    // fee, within the caps on both.
    const stolen = await eth(thief);
    const row = await gw.store.settlements.get(keyOf(payload, requirements));
    assert.ok(row?.sponsoredApproval != null);
    const step = row.sponsoredApproval;
    assert.equal(step.funded, gift);
    assert.equal(step.funded, (approval.gas ?? 0n) * (approval.maxFeePerGas ?? 0n));
    assert.ok((approval.gas ?? 0n) <= MAX_APPROVAL_GAS);
    assert.ok((approval.maxFeePerGas ?? 0n) <= MAX_APPROVAL_FEE_MULTIPLE * network_fee);
    assert.ok(stolen > 0n && stolen <= step.funded, `stolen ${stolen} of a funding of ${step.funded}`);

    // The settlement was never sent: its nonce went to the 0-value void transfer, so the fee payer's
    // sequence has no gap (funding + void), and the buyer paid nothing.
    assert.deepEqual([row.status, step.voided], ['failed', true]);
    await assert.rejects(chainClient().getTransactionReceipt({ hash: row.transactionId as Hex }));
    const voided = await chainClient().getTransactionReceipt({ hash: step.voidTransactionId as Hex });
    const voidTx = await chainClient().getTransaction({ hash: step.voidTransactionId as Hex });
    assert.deepEqual(
      [voided.status, voidTx.to?.toLowerCase(), voidTx.value, voided.gasUsed],
      ['success', feePayer().toLowerCase(), 0n, 21_000n],
    );
    assert.equal(await chainClient().getTransactionCount({ address: feePayer() }), feePayerNonce + 2);
    assert.equal(await tokenBalance(buyer.address), 1_000_000n);

    // The seller's budget is charged what the fee payer spent, exactly: the funding, its fee and the
    // void transfer's fee — no settlement fee.
    const funding = await chainClient().getTransactionReceipt({ hash: step.fundingTransactionId as Hex });
    const cost =
      step.funded + funding.gasUsed * funding.effectiveGasPrice + voided.gasUsed * voided.effectiveGasPrice;
    assert.equal((await spent(seller.accountId)) - budgetBefore, cost);
    assert.equal(feePayerBefore - (await eth(feePayer())), cost);
    assert.equal(row.sponsoredFee?.amount, cost);

    // Asked again: the same answer, nothing more sent.
    const again = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
    assert.deepEqual([again.success, again.errorReason], [false, 'permit2_allowance_required']);
    assert.equal(await eth(feePayer()), feePayerBefore - cost);
  });

  it('a crash once the settlement is voided: the finisher resends the stored void transfer, never the settlement', async () => {
    const seller = await newSeller();
    const buyer = await newBuyer(seller);
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const requirements = requirementsFor(seller);
    const payload = await stockPayload(buyer, requirements);
    const feePayerNonce = await chainClient().getTransactionCount({ address: feePayer() });
    await divertFunding(buyer, thief, payload, requirements, seller);
    const client = anvil();
    let row: Awaited<ReturnType<typeof gw.store.settlements.get>>;
    try {
      await client.setAutomine(false);
      // Voided and its void transfer sent, not mined; then the transfer is lost (the process died
      // before sending it, or the node dropped it).
      const pending = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
      assert.equal(pending.errorReason, 'settlement_pending', JSON.stringify(pending));
      row = await gw.store.settlements.get(keyOf(payload, requirements));
      assert.deepEqual([row?.status, row?.sponsoredApproval?.voided], ['claimed', true]);
      const voidId = row?.sponsoredApproval?.voidTransactionId as Hex;
      await client.dropTransaction({ hash: voidId });
      await assert.rejects(chainClient().getTransaction({ hash: voidId }), 'no longer in the pool');
    } finally {
      await client.setAutomine(true);
    }
    assert.ok(row !== undefined);
    let status = await gw.services.facilitator.finish(row, 2_000);
    for (let i = 0; i < 10 && status === 'open'; i++) {
      const now = await gw.store.settlements.get(row.key);
      status = now === undefined ? 'open' : await gw.services.facilitator.finish(now, 2_000);
    }
    assert.equal(status, 'failed');
    await assert.rejects(chainClient().getTransactionReceipt({ hash: row.transactionId as Hex }));
    const voided = await chainClient().getTransactionReceipt({
      hash: row.sponsoredApproval?.voidTransactionId as Hex,
    });
    assert.equal(voided.status, 'success');
    assert.equal(await chainClient().getTransactionCount({ address: feePayer() }), feePayerNonce + 2);
    const retried = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
    assert.deepEqual([retried.success, retried.errorReason], [false, 'permit2_allowance_required']);
  });

  it('the same buyer is never funded again: at its next nonce while the first is still open, after it failed, and on another instance', async () => {
    const seller = await newSeller();
    const buyer = await newBuyer(seller);
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const requirements = requirementsFor(seller);
    const first = await stockPayload(buyer, requirements);
    await divertFunding(buyer, thief, first, requirements, seller);
    const stolen = await eth(thief);
    const feePayerAfterTheft = await eth(feePayer());

    // Straight away, before the facilitator looks at the first again: an approval at the next nonce.
    const second = await stockPayload(buyer, requirements);
    assert.equal(approvalOf(second).nonce, 1);
    const refused = await gw.services.facilitator.settle(second, requirements, seller.accountId);
    assert.deepEqual(
      [refused.success, refused.errorReason],
      [false, 'erc20_approval_sponsoring_refused'],
      JSON.stringify(refused),
    );
    assert.match(refused.errorMessage ?? '', /once at a time, and never again/);

    const firstAnswer = await settleToEnd(first, requirements, seller);
    assert.equal(firstAnswer.errorReason, 'permit2_allowance_required');
    const budget = await spent(seller.accountId);
    const feePayerBefore = await eth(feePayer());
    assert.ok(feePayerBefore < feePayerAfterTheft, 'the void transfer was paid after the theft');

    // After it failed, here and on another instance sharing the storage.
    const third = await stockPayload(buyer, requirements);
    const here = await gw.services.facilitator.settle(third, requirements, seller.accountId);
    assert.equal(here.errorReason, 'erc20_approval_sponsoring_refused');
    other = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: 400,
      storage,
      disposeStorage: false,
      masterKey,
    });
    await other.services.facilitator.start();
    const there = await other.services.facilitator.settle(third, requirements, seller.accountId);
    assert.deepEqual(
      [there.success, there.errorReason],
      [false, 'erc20_approval_sponsoring_refused'],
      JSON.stringify(there),
    );

    // Nothing was funded, sent or charged for any of them; the thief has only the first funding.
    assert.equal(await eth(feePayer()), feePayerBefore);
    assert.equal(await spent(seller.accountId), budget);
    assert.equal(await eth(thief), stolen);
    assert.equal(await chainClient().getTransactionCount({ address: buyer.address }), 1);
    assert.equal(await tokenBalance(buyer.address), 1_000_000n);
  });

  it('honest buyers are still funded and settle, each giving its place back (X402_MAX_UNSETTLED_APPROVAL_FUNDINGS 1: the second would be refused otherwise)', async () => {
    const seller = await newSeller();
    const requirements = requirementsFor(seller);
    for (let i = 0; i < 2; i++) {
      const buyer = await newBuyer(seller);
      const payload = await stockPayload(buyer, requirements);
      const answer = await settleToEnd(payload, requirements, seller);
      assert.deepEqual([answer.success, answer.payer], [true, buyer.address], JSON.stringify(answer));
      assert.equal(await tokenBalance(buyer.address), 1_000_000n - 20000n);
      const row = await gw.store.settlements.get(keyOf(payload, requirements));
      assert.ok((row?.sponsoredApproval?.funded ?? 0n) > 0n, 'its approval gas was funded');
      assert.equal(row?.sponsoredApproval?.voided, undefined);
      assert.equal(await unsettledFundings(gw.store, seller.accountId, network, feeDayOf(Date.now())), 0n);
      // The payer's own place is free again: a claim of it by another settlement wins.
      const place = payerFundingKey(network, buyer.address);
      assert.equal(await gw.store.settlements.claimApproval(place, 'probe', Date.now()), true);
      await gw.store.settlements.releaseApproval(place, 'probe');
    }
    assert.equal(await tokenBalance(seller.evm), 40000n);
  });

  it('an account at X402_MAX_UNSETTLED_APPROVAL_FUNDINGS funds no more approvals that day; buyers paying their own approval gas still settle', async () => {
    const seller = await newSeller();
    const requirements = requirementsFor(seller);
    const hostile = await newBuyer(seller);
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const diverted = await stockPayload(hostile, requirements);
    await divertFunding(hostile, thief, diverted, requirements, seller);
    assert.equal(
      (await settleToEnd(diverted, requirements, seller)).errorReason,
      'permit2_allowance_required',
    );
    assert.equal(await unsettledFundings(gw.store, seller.accountId, network, feeDayOf(Date.now())), 1n);

    // A fresh buyer (another address: the payer rule does not see it) needing funding is refused.
    const fresh = await newBuyer(seller);
    const feePayerBefore = await eth(feePayer());
    const refused = await gw.services.facilitator.settle(
      await stockPayload(fresh, requirements),
      requirements,
      seller.accountId,
    );
    assert.deepEqual(
      [refused.success, refused.errorReason],
      [false, 'erc20_approval_sponsoring_refused'],
      JSON.stringify(refused),
    );
    assert.match(refused.errorMessage ?? '', /X402_MAX_UNSETTLED_APPROVAL_FUNDINGS/);
    assert.equal(await eth(feePayer()), feePayerBefore);
    assert.equal(await eth(fresh.address), 0n);

    // A buyer holding the gas of its own approval is not funded: its approval is sent, and it settles.
    const own = await newBuyer(seller);
    await anvil().setBalance({ address: own.address, value: 10n ** 16n });
    const payload = await stockPayload(own, requirements);
    const answer = await settleToEnd(payload, requirements, seller);
    assert.equal(answer.success, true, JSON.stringify(answer));
    const row = await gw.store.settlements.get(keyOf(payload, requirements));
    assert.deepEqual(
      [row?.sponsoredApproval?.funded, row?.sponsoredApproval?.fundingTransactionId],
      [0n, null],
    );
    const allowance = await chainClient().readContract({
      address: usdc,
      abi: TOKEN_ABI,
      functionName: 'allowance',
      args: [own.address, PERMIT2_ADDRESS],
    });
    assert.ok(allowance > 0n);
  });
});
