import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { declareErc20ApprovalGasSponsoringExtension } from '@x402/extensions';
import { type Address, createPublicClient, type Hex, http, parseAbi, parseTransaction } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { feeDayOf } from '../../../src/domain/sponsored-fees.ts';
import { unsettledFundings } from '../../../src/services/facilitator/approval-funding-limits.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const TOKEN_ABI = parseAbi(['function balanceOf(address) view returns (uint256)']);

/**
 * Review (session 18) of e99874c (erc20ApprovalGasSponsoring): the settlement's fee-payer nonce is
 * allocated and signed in the claim, but its transaction is held back until the buyer's approval is
 * mined, for up to APPROVAL_PATIENCE_MS (2 min). The facilitator has ONE fee payer per chain family, so
 * every other settlement of every account on the network is allocated a later nonce, broadcast, and
 * waits behind the gap.
 *
 * The buyer writes the approval's fee: approvalShortfallNow caps maxFeePerGas from above (3 × the
 * estimate) but not from below. An approval bidding 0 wei per gas needs no funding (its max cost is 0),
 * so neither of e99874c's limits sees it (the payer place and X402_MAX_UNSETTLED_APPROVAL_FUNDINGS are
 * taken only for a funded approval), and no node will ever mine it: the hostile payment holds the fee
 * payer's nonce for the full 2 minutes, then is voided, and the next fresh buyer nonce does it again.
 * A buyer (with any seller's key, or through any seller's paywall) stalls every seller's settlements.
 *
 * Fixed: an approval is sponsored only when a node would mine it now — a max fee at least the next
 * block's highest possible base fee, a priority fee at least half the network's suggestion
 * (erc20_approval_tx_fee_too_low), and at least the gas it uses (erc20_approval_tx_gas_too_low) — checked
 * in verify and before the claim signs anything; a payer carrying code (EIP-7702: its ETH can move
 * without its nonce, leaving the approval unable to pay) is not sponsored; and the allowance before the settlement is read at or
 * after the approval's block, so a lagging node cannot void an honest buyer's settlement.
 */
describe('review-session18: an approval that can never be mined would hold the fee payer nonce of every settlement', () => {
  let evm: TestEvm;
  let storage: TempStorage;
  let gw: TestGateway;
  let network: `eip155:${string}`;
  let usdc: Address;
  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const feePayer = () => gw.services.facilitator.schemeFor(network)?.signers()[0] as Address;
  const tokenBalance = (address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] });

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
  const requirementsFor = (seller: Seller, permit2: boolean): PaymentRequirements => ({
    scheme: 'exact',
    network,
    asset: usdc,
    amount: '20000',
    payTo: seller.evm,
    maxTimeoutSeconds: 300,
    extra: { name: 'USD Coin', version: '2', ...(permit2 ? { assetTransferMethod: 'permit2' } : {}) },
  });
  const stockPayload = (buyer: PrivateKeyAccount, requirements: PaymentRequirements, sponsoring: boolean) =>
    x402Client
      .fromConfig({
        schemes: [{ network, client: new EvmBuyerScheme(buyer, { rpcUrl: evm.anvil.rpcUrl }) }],
        spendControls: false,
      })
      .createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://shop.example/r' },
        accepts: [requirements],
        ...(sponsoring ? { extensions: declareErc20ApprovalGasSponsoringExtension() } : {}),
      });
  const settleToEnd = async (payload: PaymentPayload, requirements: PaymentRequirements, seller: Seller) => {
    for (let i = 0; ; i++) {
      const answer = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
      if (answer.errorReason !== 'settlement_pending' || i >= 20) return answer;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    gw = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: 400,
      storage,
      masterKey: new Uint8Array(randomBytes(32)),
    });
    await gw.services.facilitator.start();
  });

  after(async () => {
    // The test gateway disposes of the storage it was given.
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('an approval no node would mine is refused before anything is signed; the fee payer nonce is not held, and other accounts settle', async () => {
    // An honest seller settling what its buyers send (as protect() does; it declares nothing: the
    // facilitator sponsors any payload carrying the extension). The hostile buyer is only a buyer: its
    // stock payload, with the approval re-signed so that no node mines it.
    const paywallSeller = await newSeller();
    const hostile = await newBuyer(paywallSeller);
    const paywallRequirements = requirementsFor(paywallSeller, true);
    const stock = await stockPayload(hostile, paywallRequirements, true);
    const extension = stock.extensions?.erc20ApprovalGasSponsoring as {
      info: Record<string, unknown> & { signedTransaction: Hex };
    };
    const approval = parseTransaction(extension.info.signedTransaction);
    const resigned = async (changes: {
      maxFeePerGas: bigint;
      maxPriorityFeePerGas: bigint;
      gas?: bigint;
    }) => {
      const wire = await hostile.signTransaction({
        type: 'eip1559',
        chainId: approval.chainId as number,
        to: approval.to as Address,
        data: approval.data as Hex,
        gas: changes.gas ?? (approval.gas as bigint),
        nonce: approval.nonce as number,
        maxFeePerGas: changes.maxFeePerGas,
        maxPriorityFeePerGas: changes.maxPriorityFeePerGas,
      });
      return {
        ...stock,
        extensions: {
          ...stock.extensions,
          erc20ApprovalGasSponsoring: { ...extension, info: { ...extension.info, signedTransaction: wire } },
        },
      } satisfies PaymentPayload;
    };
    const client = chainClient();
    const fees = await client.estimateFeesPerGas();
    const baseFee = (await client.getBlock()).baseFeePerGas ?? 0n;
    assert.ok(baseFee > 0n, 'anvil has a base fee');
    const feePayerNonce = await client.getTransactionCount({ address: feePayer(), blockTag: 'pending' });

    const cases: [string, PaymentPayload, string][] = [
      // 0 wei per gas: no funding needed, so no funding cap would count it (e99874c).
      [
        '0 wei per gas',
        await resigned({ maxFeePerGas: 0n, maxPriorityFeePerGas: 0n }),
        'erc20_approval_tx_fee_too_low',
      ],
      [
        'a max fee under the base fee',
        await resigned({ maxFeePerGas: baseFee - 1n, maxPriorityFeePerGas: 0n }),
        'erc20_approval_tx_fee_too_low',
      ],
      [
        'no priority fee',
        await resigned({ maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: 0n }),
        'erc20_approval_tx_fee_too_low',
      ],
      // Under its intrinsic gas a node refuses it outright; it would never be mined either.
      ['too little gas', await resigned({ ...fees, gas: 21_000n }), 'erc20_approval_tx_gas_too_low'],
    ];
    for (const [what, payload, reason] of cases) {
      const verified = await gw.services.facilitator.verify(payload, paywallRequirements);
      assert.deepEqual([verified.isValid, verified.invalidReason], [false, reason], `verify, ${what}`);
      const settled = await gw.services.facilitator.settle(
        payload,
        paywallRequirements,
        paywallSeller.accountId,
      );
      assert.deepEqual([settled.success, settled.errorReason], [false, reason], `settle, ${what}`);
    }
    // Nothing was signed with the fee payer's key or sent: no nonce of it is held, the buyer got no ETH.
    assert.equal(
      await client.getTransactionCount({ address: feePayer(), blockTag: 'pending' }),
      feePayerNonce,
    );
    assert.equal(await client.getBalance({ address: hostile.address }), 0n);
    assert.equal(
      await unsettledFundings(gw.store, paywallSeller.accountId, network, feeDayOf(Date.now())),
      0n,
    );

    // Another seller (another account) settles an honest EIP-3009 payment needing no approval: it is
    // not queued behind anything, its first settle call lands it.
    const seller = await newSeller();
    const buyer = await newBuyer(seller);
    const requirements = requirementsFor(seller, false);
    const answer = await gw.services.facilitator.settle(
      await stockPayload(buyer, requirements, false),
      requirements,
      seller.accountId,
    );
    assert.deepEqual([answer.success, answer.errorReason], [true, undefined], JSON.stringify(answer));
    assert.equal(await tokenBalance(seller.evm), 20_000n);
    assert.equal(
      await client.getTransactionCount({ address: feePayer(), blockTag: 'pending' }),
      feePayerNonce + 1,
    );

    // The same buyer's stock approval (the network's fee estimate) is still sponsored and settles.
    const honest = await settleToEnd(stock, paywallRequirements, paywallSeller);
    assert.deepEqual([honest.success, honest.errorReason], [true, undefined], JSON.stringify(honest));
    assert.equal(await tokenBalance(paywallSeller.evm), 20_000n);
  });

  it('a payer carrying code (EIP-7702), whose ETH can move without its nonce, is not sponsored', async () => {
    const seller = await newSeller();
    const buyer = await newBuyer(seller);
    const requirements = requirementsFor(seller, true);
    const payload = await stockPayload(buyer, requirements, true);
    // What a delegation leaves on the account (0xef0100 ‖ the delegate), as a type-4 transaction would.
    await chainClient().request({
      method: 'anvil_setCode',
      params: [buyer.address, `0xef0100${'11'.repeat(20)}`],
    } as never);
    const feePayerNonce = await chainClient().getTransactionCount({
      address: feePayer(),
      blockTag: 'pending',
    });
    const verified = await gw.services.facilitator.verify(payload, requirements);
    assert.deepEqual(
      [verified.isValid, verified.invalidReason],
      [false, 'erc20_approval_sponsoring_refused'],
    );
    const settled = await gw.services.facilitator.settle(payload, requirements, seller.accountId);
    assert.deepEqual([settled.success, settled.errorReason], [false, 'erc20_approval_sponsoring_refused']);
    assert.equal(
      await chainClient().getTransactionCount({ address: feePayer(), blockTag: 'pending' }),
      feePayerNonce,
    );
    assert.equal(await tokenBalance(seller.evm), 0n);
  });

  it('the allowance before a sponsored settlement is read at or after the block the approval was mined in', async () => {
    const scheme = gw.services.facilitator.schemeFor(network);
    assert.ok(scheme?.approvalCovers !== undefined);
    const seller = await newSeller();
    const buyer = await newBuyer(seller);
    const payload = await stockPayload(buyer, requirementsFor(seller, true), true);
    const sponsoring = payload.extensions?.erc20ApprovalGasSponsoring as { info: { signedTransaction: Hex } };
    const wire = sponsoring.info.signedTransaction;
    const bytes = new Uint8Array(Buffer.from(wire.slice(2), 'hex'));
    const head = await chainClient().getBlockNumber({ cacheTime: 0 });
    // No approval yet: no allowance, read at the node's head.
    assert.equal(await scheme.approvalCovers(bytes, 20_000n, head), false);
    // A node whose head is behind the approval's block (as a lagging one behind a failover RPC is)
    // decides nothing: the step stays pending rather than voiding an honest buyer's settlement.
    await assert.rejects(scheme.approvalCovers(bytes, 20_000n, head + 5n), /behind the approval's block/);
  });
});
