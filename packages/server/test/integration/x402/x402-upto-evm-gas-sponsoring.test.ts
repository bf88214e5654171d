import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { UptoEvmScheme as UptoBuyerScheme } from '@x402/evm/upto/client';
import {
  declareEip2612GasSponsoringExtension,
  declareErc20ApprovalGasSponsoringExtension,
} from '@x402/extensions';
import {
  type Address,
  createPublicClient,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  keccak256,
  maxUint256,
  parseAbi,
  toFunctionSelector,
} from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { UPTO_PERMIT2_PROXY_ADDRESS } from '../../../src/chains/evm/upto-permit2-proxy.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { feeDayOf } from '../../../src/domain/sponsored-fees.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function approve(address spender, uint256 amount) returns (bool)',
]);

const SETTLE_WITH_PERMIT = toFunctionSelector(
  'settleWithPermit((uint256,uint256,bytes32,bytes32,uint8),((address,uint256),uint256,uint256),uint256,address,(address,address,uint256),bytes)',
);

const MAX = 20_000n;
const USED = 7_000n;

/**
 * x402's gas-sponsoring extensions with `upto` on EVM, as the stock `@x402/evm/upto/client` signs them for
 * a buyer holding the token but no Permit2 allowance and no ETH: `eip2612GasSponsoring` settles through
 * the upto proxy's `settleWithPermit`; `erc20ApprovalGasSponsoring` has the facilitator fund and send the
 * buyer's approval first. The seller settles the actual amount, less than the signed maximum.
 */
describe('x402 upto on EVM with gas sponsoring', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let seller: { key: string; accountId: string; evm: Address };
  let network: `eip155:${string}`;
  let usdc: Address;
  let facilitatorAddress: Address;

  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, seller.key, method, url, payload);
  const tokenBalance = (address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] });
  const allowance = (owner: Address) =>
    chainClient().readContract({
      address: usdc,
      abi: TOKEN_ABI,
      functionName: 'allowance',
      args: [owner, PERMIT2_ADDRESS],
    });
  const newBuyer = async (): Promise<PrivateKeyAccount> => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await api('POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    return buyer;
  };
  const requirementsFor = (amount = MAX): PaymentRequirements => ({
    scheme: 'upto',
    network,
    asset: usdc,
    amount: amount.toString(),
    payTo: seller.evm,
    maxTimeoutSeconds: 120,
    extra: { name: 'USD Coin', version: '2', assetTransferMethod: 'permit2', facilitatorAddress },
  });
  const stockPayload = (buyer: PrivateKeyAccount, extensions: Record<string, unknown>) =>
    x402Client
      .fromConfig({
        schemes: [{ network, client: new UptoBuyerScheme(buyer, { rpcUrl: evm.anvil.rpcUrl }) }],
        spendControls: false,
      })
      .createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://shop.example/metered' },
        accepts: [requirementsFor()],
        extensions,
      });
  const facilitator = async (action: 'verify' | 'settle', paymentPayload: PaymentPayload, amount = MAX) =>
    (
      await api('POST', `/facilitator/${action}`, {
        x402Version: 2,
        paymentPayload,
        paymentRequirements: requirementsFor(amount),
      })
    ).body;
  const spentFees = () => gw.store.sponsoredFees.spent(seller.accountId, network, feeDayOf(Date.now()));

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    gw = await startTestGateway({ networks: new NetworkRegistry([evm.adapter]) });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      evm: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
    facilitatorAddress = getAddress(gw.services.facilitator.supported().signers['eip155:*']?.[0] ?? '0x');
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('eip2612GasSponsoring: the actual amount settles through the upto proxy settleWithPermit, the buyer spending no ETH, once', async () => {
    const buyer = await newBuyer();
    const payload = await stockPayload(buyer, declareEip2612GasSponsoringExtension());
    assert.ok(payload.extensions?.eip2612GasSponsoring !== undefined, 'the stock upto buyer signed a permit');
    const verdict = await facilitator('verify', payload);
    assert.equal(verdict.isValid, true, JSON.stringify(verdict));
    const sellerBefore = await tokenBalance(seller.evm);
    const settled = await facilitator('settle', payload, USED);
    assert.deepEqual([settled.success, settled.amount], [true, USED.toString()], JSON.stringify(settled));
    const tx = await chainClient().getTransaction({ hash: settled.transaction as Hex });
    assert.equal(getAddress(tx.to ?? '0x'), UPTO_PERMIT2_PROXY_ADDRESS);
    assert.equal(tx.input.slice(0, 10), SETTLE_WITH_PERMIT);
    assert.equal(await tokenBalance(seller.evm), sellerBefore + USED);
    assert.equal(await tokenBalance(buyer.address), 1_000_000n - USED);
    assert.equal(await chainClient().getBalance({ address: buyer.address }), 0n);
    // The permit approved the maximum; the settlement used only the actual amount of it.
    assert.equal(await allowance(buyer.address), MAX - USED);
    const again = await facilitator('settle', payload, USED);
    assert.deepEqual([again.success, again.errorReason], [false, 'duplicate_settlement']);
  });

  it('erc20ApprovalGasSponsoring: the buyer approval funded to its shortfall and sent first, then the actual amount, charged to the fee budget, once', async () => {
    const buyer = await newBuyer();
    const payload = await stockPayload(buyer, declareErc20ApprovalGasSponsoringExtension());
    const info = (payload.extensions?.erc20ApprovalGasSponsoring as { info: { signedTransaction: Hex } })
      ?.info;
    assert.ok(info !== undefined, 'the stock upto buyer signed an approval');
    const verdict = await facilitator('verify', payload);
    assert.equal(verdict.isValid, true, JSON.stringify(verdict));
    const sellerBefore = await tokenBalance(seller.evm);
    const feesBefore = await spentFees();
    const settled = await facilitator('settle', payload, USED);
    assert.deepEqual([settled.success, settled.amount], [true, USED.toString()], JSON.stringify(settled));
    assert.equal(await tokenBalance(seller.evm), sellerBefore + USED);
    assert.equal(await tokenBalance(buyer.address), 1_000_000n - USED);
    assert.ok((await allowance(buyer.address)) >= maxUint256 - USED);
    // The buyer's ETH: what it was given, less its approval's fee; the budget holds every cost.
    const approval = await chainClient().getTransactionReceipt({
      hash: keccak256(info.signedTransaction),
    });
    const approvalTx = await chainClient().getTransaction({ hash: approval.transactionHash });
    const funded = approvalTx.gas * (approvalTx.maxFeePerGas ?? 0n);
    assert.equal(
      await chainClient().getBalance({ address: buyer.address }),
      funded - approval.gasUsed * approval.effectiveGasPrice,
    );
    assert.ok((await spentFees()) - feesBefore > funded);
    const again = await facilitator('settle', payload, USED);
    assert.deepEqual([again.success, again.errorReason], [false, 'duplicate_settlement']);
  });

  it('erc20ApprovalGasSponsoring: an approval of another spender or of less than the maximum is refused before anything is spent', async () => {
    const buyer = await newBuyer();
    const payload = await stockPayload(buyer, declareErc20ApprovalGasSponsoringExtension());
    const fees = await chainClient().estimateFeesPerGas();
    const approval = (spender: Address, amount: bigint) =>
      buyer.signTransaction({
        type: 'eip1559',
        chainId: Number(network.slice('eip155:'.length)),
        to: usdc,
        data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'approve', args: [spender, amount] }),
        nonce: 0,
        gas: 70_000n,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      });
    const withTx = async (signedTransaction: Hex): Promise<PaymentPayload> => ({
      ...payload,
      extensions: {
        erc20ApprovalGasSponsoring: {
          info: {
            ...(payload.extensions?.erc20ApprovalGasSponsoring as { info: object } | undefined)?.info,
            signedTransaction,
          },
        },
      },
    });
    const feesBefore = await spentFees();
    const other = privateKeyToAccount(generatePrivateKey()).address;
    for (const [p, reason] of [
      [await withTx(await approval(other, maxUint256)), 'erc20_approval_tx_wrong_spender'],
      [await withTx(await approval(PERMIT2_ADDRESS, MAX - 1n)), 'erc20_approval_tx_invalid_calldata'],
    ] as const) {
      assert.equal((await facilitator('verify', p)).invalidReason, reason);
      assert.equal((await facilitator('settle', p, USED)).errorReason, reason);
    }
    assert.equal(await spentFees(), feesBefore);
    assert.equal(await chainClient().getBalance({ address: buyer.address }), 0n);
    assert.equal(await tokenBalance(buyer.address), 1_000_000n);
  });
});
