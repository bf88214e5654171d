import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { UPTO_PERMIT2_PROXY_RUNTIME_CODE_HASH } from '@gate402/anvil';
import { x402Client } from '@x402/core/client';
import {
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { createPermit2ApprovalTx, x402UptoPermit2ProxyABI, x402UptoPermit2ProxyAddress } from '@x402/evm';
import { UptoEvmScheme as UptoBuyerScheme } from '@x402/evm/upto/client';
import { UptoEvmScheme as UptoSellerScheme } from '@x402/evm/upto/server';
import { paymentMiddleware, setSettlementOverrides, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  getAddress,
  type Hex,
  http,
  keccak256,
  parseAbi,
  toFunctionSelector,
} from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import {
  UPTO_PERMIT2_PROXY_ABI,
  UPTO_PERMIT2_PROXY_ADDRESS,
} from '../../../src/chains/evm/upto-permit2-proxy.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { recordingFetch, stockPayload } from '../../support/x402-buyer.ts';
import { gatewayFacilitator } from '../../support/x402-shop.ts';

const TOKEN_ABI = parseAbi(['function balanceOf(address) view returns (uint256)']);
const MAX = 50_000n;

/**
 * x402 `upto` on the embedded anvil, as the stock packages speak it: a stock `@x402/express` seller with
 * `@x402/evm/upto/server` whose facilitator is gate402, its handler stating the actual amount with
 * `setSettlementOverrides`, and a stock `@x402/fetch` buyer with `@x402/evm/upto/client` who signs a
 * Permit2 permit for the maximum through x402's upto proxy (gate402's own implementation, placed at the
 * canonical address). The buyer pays what the seller settles, never more than the maximum, once.
 */
describe('x402 upto on EVM (Permit2 through the upto proxy)', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let seller: { key: string; accountId: string; evm: Address };
  let shopUrl: string;
  let closeShop: (() => Promise<void>) | undefined;
  let network: `eip155:${string}`;
  let usdc: Address;
  let facilitatorAddress: Address;

  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);
  const balanceOf = (address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] });

  /** A buyer with ETH for gas and 1 USDC who approved Permit2 once (x402's option A). */
  const newBuyer = async (): Promise<PrivateKeyAccount> => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    for (const body of [
      { address: buyer.address, amount: 1 },
      { address: buyer.address, amount: 1, token: 'USDC' },
    ]) {
      const funded = await api(seller.key, 'POST', '/faucet', body);
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    const wallet = createWalletClient({ account: buyer, transport: http(evm.anvil.rpcUrl) });
    const hash = await wallet.sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null });
    assert.equal(
      (await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 })).status,
      'success',
    );
    return buyer;
  };

  /** The requirements a stock upto seller offers through gate402 (with the facilitator's address). */
  const requirementsFor = (changes: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
    scheme: 'upto',
    network,
    asset: usdc,
    amount: MAX.toString(),
    payTo: seller.evm,
    maxTimeoutSeconds: 120,
    extra: { name: 'USD Coin', version: '2', assetTransferMethod: 'permit2', facilitatorAddress },
    ...changes,
  });
  const uptoPayload = (buyer: PrivateKeyAccount, requirements = requirementsFor()) =>
    stockPayload(new UptoBuyerScheme(buyer), requirements);
  const facilitator = async (
    action: 'verify' | 'settle',
    paymentPayload: PaymentPayload,
    paymentRequirements: PaymentRequirements,
  ) =>
    (
      await api(seller.key, 'POST', `/facilitator/${action}`, {
        x402Version: 2,
        paymentPayload,
        paymentRequirements,
      })
    ).body;

  /** A permit signed by `buyer` as the stock client would, with `changes` to what it signs. */
  const signedPermit = async (
    buyer: PrivateKeyAccount,
    changes: { spender?: Address; facilitator?: Address; amount?: bigint; to?: Address } = {},
  ): Promise<PaymentPayload> => {
    const requirements = requirementsFor();
    const permit2Authorization = {
      from: buyer.address,
      permitted: { token: usdc, amount: (changes.amount ?? MAX).toString() },
      spender: changes.spender ?? UPTO_PERMIT2_PROXY_ADDRESS,
      nonce: BigInt(keccak256(generatePrivateKey())).toString(),
      deadline: String(Math.floor(Date.now() / 1000) + 120),
      witness: {
        to: changes.to ?? seller.evm,
        facilitator: changes.facilitator ?? facilitatorAddress,
        validAfter: '0',
      },
    };
    const signature = await buyer.signTypedData({
      domain: { name: 'Permit2', chainId: Number(network.slice(7)), verifyingContract: PERMIT2_ADDRESS },
      types: {
        PermitWitnessTransferFrom: [
          { name: 'permitted', type: 'TokenPermissions' },
          { name: 'spender', type: 'address' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
          { name: 'witness', type: 'Witness' },
        ],
        TokenPermissions: [
          { name: 'token', type: 'address' },
          { name: 'amount', type: 'uint256' },
        ],
        Witness: [
          { name: 'to', type: 'address' },
          { name: 'facilitator', type: 'address' },
          { name: 'validAfter', type: 'uint256' },
        ],
      },
      primaryType: 'PermitWitnessTransferFrom',
      message: {
        permitted: { token: usdc, amount: changes.amount ?? MAX },
        spender: permit2Authorization.spender,
        nonce: BigInt(permit2Authorization.nonce),
        deadline: BigInt(permit2Authorization.deadline),
        witness: {
          to: permit2Authorization.witness.to,
          facilitator: permit2Authorization.witness.facilitator,
          validAfter: 0n,
        },
      },
    });
    return {
      x402Version: 2,
      resource: { url: 'https://shop.example/r' },
      accepted: requirements,
      payload: { signature, permit2Authorization },
    };
  };

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    gw = await startTestGateway({ networks: new NetworkRegistry([evm.adapter]) });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    const gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      evm: (await api(caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
    facilitatorAddress = getAddress(gw.services.facilitator.supported().signers['eip155:*']?.[0] ?? '0x');

    // A stock @x402/express seller: up to 0.05 USDC; the handler charges what the query says it used.
    const server = new x402ResourceServer(gatewayFacilitator(gatewayUrl, caller.key));
    server.register(network, new UptoSellerScheme());
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /metered': {
            accepts: {
              scheme: 'upto',
              network,
              payTo: seller.evm,
              price: { amount: MAX.toString(), asset: usdc, extra: { name: 'USD Coin', version: '2' } },
            },
            description: 'metered by use, up to 0.05 USDC',
          },
        },
        server,
      ),
    );
    app.get('/metered', (req, res) => {
      setSettlementOverrides(res, { amount: String(req.query.used ?? MAX) });
      res.json({ used: String(req.query.used ?? MAX) });
    });
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    shopUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/metered`;
    closeShop = () => new Promise((resolve) => listening.close(() => resolve()));
  });

  after(async () => {
    await closeShop?.();
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('the embedded anvil carries the upto proxy at x402’s canonical address, with the stock ABI’s entry points', async () => {
    assert.equal(UPTO_PERMIT2_PROXY_ADDRESS, x402UptoPermit2ProxyAddress);
    const code = await chainClient().getCode({ address: UPTO_PERMIT2_PROXY_ADDRESS });
    assert.equal(keccak256(code ?? '0x'), UPTO_PERMIT2_PROXY_RUNTIME_CODE_HASH);
    const selectors = (abi: readonly { type: string }[]) =>
      abi
        .filter(
          (x) =>
            x.type === 'function' &&
            ['settle', 'settleWithPermit'].includes((x as unknown as { name: string }).name),
        )
        .map((x) => toFunctionSelector(x as Parameters<typeof toFunctionSelector>[0]))
        .sort();
    assert.deepEqual(selectors(UPTO_PERMIT2_PROXY_ABI), selectors(x402UptoPermit2ProxyABI));
    assert.equal(selectors(UPTO_PERMIT2_PROXY_ABI).length, 2);
  });

  it('lists upto under x402 v2 only, with the facilitatorAddress stock clients sign into the witness', async () => {
    const { status, body } = await api(seller.key, 'GET', '/facilitator/supported');
    assert.equal(status, 200);
    const kinds = body.kinds as { x402Version: number; scheme: string; network: string; extra?: object }[];
    const upto = kinds.filter((k) => k.scheme === 'upto');
    assert.deepEqual(upto, [{ x402Version: 2, scheme: 'upto', network, extra: { facilitatorAddress } }]);
    assert.ok(
      kinds.some((k) => k.scheme === 'exact' && k.network === network),
      'exact is still offered',
    );
    assert.deepEqual(body.signers['eip155:*'], [facilitatorAddress]);
  });

  it('@x402/fetch pays the @x402/express upto seller: the buyer’s balance drops by the settled amount, not the maximum, once', async () => {
    const buyer = await newBuyer();
    const client = x402Client.fromConfig({
      schemes: [{ network, client: new UptoBuyerScheme(buyer) }],
      spendControls: { allowedAssets: [{ network, asset: usdc }] },
    });
    const { fetch: recording, sent } = recordingFetch();
    const [buyerBefore, sellerBefore] = await Promise.all([balanceOf(buyer.address), balanceOf(seller.evm)]);

    const res = await wrapFetchWithPayment(recording, client)(`${shopUrl}?used=12345`);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { used: '12345' });
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.deepEqual(
      [settled.success, settled.payer, settled.network, settled.amount],
      [true, buyer.address, network, '12345'],
    );
    const payload = decodePaymentSignatureHeader(sent[0] ?? '');
    const permit = payload.payload.permit2Authorization as {
      spender: string;
      permitted: { amount: string };
      witness: { to: string; facilitator: string };
    };
    assert.deepEqual(
      [permit.spender, permit.permitted.amount, permit.witness.to, permit.witness.facilitator],
      [UPTO_PERMIT2_PROXY_ADDRESS, MAX.toString(), seller.evm, facilitatorAddress],
    );
    const tx = await chainClient().getTransaction({ hash: settled.transaction as Hex });
    assert.deepEqual(
      [getAddress(tx.to ?? '0x'), getAddress(tx.from)],
      [UPTO_PERMIT2_PROXY_ADDRESS, facilitatorAddress],
    );
    assert.equal(await balanceOf(buyer.address), buyerBefore - 12345n);
    assert.equal(await balanceOf(seller.evm), sellerBefore + 12345n);
    const history = await api(seller.key, 'GET', `/payment/history/${seller.evm}`);
    assert.deepEqual(
      [history.body.total, history.body.payments[0].amount, history.body.payments[0].sender],
      [1, 0.012345, buyer.address],
    );

    // The same payload again, at any amount: refused as settled, never sent twice.
    const verifyAgain = await facilitator('verify', payload, payload.accepted);
    assert.deepEqual([verifyAgain.isValid, verifyAgain.invalidReason], [false, 'duplicate_settlement']);
    for (const amount of ['12345', '20000', '1']) {
      const again = await facilitator('settle', payload, { ...payload.accepted, amount });
      assert.deepEqual(
        [again.success, again.errorReason, again.transaction, again.amount],
        [false, 'duplicate_settlement', settled.transaction, '12345'],
      );
    }
    assert.equal(await balanceOf(buyer.address), buyerBefore - 12345n);
    assert.equal((await api(seller.key, 'GET', `/payment/history/${seller.evm}`)).body.total, 1);
  });

  it('POST /payment/receive takes an upto PAYMENT-SIGNATURE value and settles expectedAmount, the seller’s final amount, once', async () => {
    const buyer = await newBuyer();
    const payload = await uptoPayload(buyer);
    const body = {
      walletAddress: seller.evm,
      paymentProof: encodePaymentSignatureHeader(payload),
      expectedAmount: 0.0123,
      asset: 'USDC',
    };
    // /v1/payments/verify checks the signed maximum (0.05) covers `amount`; it settles nothing.
    const checked = await api(seller.key, 'POST', '/v1/payments/verify', {
      payment_proof: body.paymentProof,
      amount: 12_300,
      recipient: seller.evm,
      asset: 'USDC',
    });
    assert.equal(checked.body.verified, true, JSON.stringify(checked.body));
    const received = await api(seller.key, 'POST', '/payment/receive', body);
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.deepEqual(
      [received.body.amountReceived, received.body.sender, received.body.status],
      [0.0123, buyer.address, 'confirmed'],
    );
    assert.equal(await balanceOf(buyer.address), 1_000_000n - 12_300n);
    const again = await api(seller.key, 'POST', '/payment/receive', { ...body, expectedAmount: 0.04 });
    assert.deepEqual(
      [again.status, again.body.error.code, again.body.error.details.paymentProof],
      [422, 'INVALID_PAYMENT_PROOF', 'already_used'],
    );
    // More than the signed maximum is refused before anything is settled.
    const other = await uptoPayload(buyer);
    const over = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      paymentProof: encodePaymentSignatureHeader(other),
      expectedAmount: 0.06,
    });
    assert.equal(over.status, 422, JSON.stringify(over.body));
    assert.equal(await balanceOf(buyer.address), 1_000_000n - 12_300n);
  });

  it('a settle above the signed maximum is refused with the stock reason; nothing moves, and the permit still settles within it', async () => {
    const buyer = await newBuyer();
    const payload = await uptoPayload(buyer);
    assert.equal((await facilitator('verify', payload, payload.accepted)).isValid, true);
    const over = await facilitator('settle', payload, { ...payload.accepted, amount: (MAX + 1n).toString() });
    assert.deepEqual(
      [over.success, over.errorReason, over.transaction, over.payer],
      [false, 'invalid_upto_evm_payload_settlement_exceeds_amount', '', buyer.address],
    );
    assert.equal(await balanceOf(buyer.address), 1_000_000n);
    const exact = await facilitator('settle', payload, payload.accepted);
    assert.deepEqual([exact.success, exact.amount], [true, MAX.toString()]);
    assert.equal(await balanceOf(buyer.address), 1_000_000n - MAX);
  });

  it('a settle of 0 charges nothing without the chain and consumes the payload: a later settle of it is a duplicate', async () => {
    const buyer = await newBuyer();
    const payload = await uptoPayload(buyer);
    const zero = await facilitator('settle', payload, { ...payload.accepted, amount: '0' });
    assert.deepEqual(
      [zero.success, zero.transaction, zero.amount, zero.payer],
      [true, '', '0', buyer.address],
    );
    const later = await facilitator('settle', payload, { ...payload.accepted, amount: '30000' });
    assert.deepEqual([later.success, later.errorReason], [false, 'duplicate_settlement']);
    assert.equal(await balanceOf(buyer.address), 1_000_000n);
    // A maximum of 0 is no offer: refused at verify.
    const none = await facilitator('verify', payload, { ...payload.accepted, amount: '0' });
    assert.deepEqual([none.isValid, none.invalidReason], [false, 'invalid_payment_requirements']);
  });

  it('two settles of one payload at once (different amounts): one moves money, once', async () => {
    const buyer = await newBuyer();
    const payload = await uptoPayload(buyer);
    const answers = await Promise.all(
      ['7000', '9000', '7000'].map((amount) =>
        facilitator('settle', payload, { ...payload.accepted, amount }),
      ),
    );
    const won = answers.filter((a) => a.success === true);
    assert.equal(won.length, 1, JSON.stringify(answers));
    for (const a of answers.filter((x) => x.success !== true)) {
      assert.ok(['duplicate_settlement', 'settlement_pending'].includes(a.errorReason), JSON.stringify(a));
    }
    const moved = BigInt(won[0]?.amount ?? '0');
    assert.equal(await balanceOf(buyer.address), 1_000_000n - moved);
  });

  it('refuses another payee, asset or network, a permit for another spender or facilitator, a tampered maximum, and an exact payload', async () => {
    const buyer = await newBuyer();
    const payload = await uptoPayload(buyer);
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    const reasonOf = async (
      action: 'verify' | 'settle',
      p: PaymentPayload,
      changes: Partial<PaymentRequirements> = {},
    ) => {
      const r = { ...p.accepted, ...changes };
      const body = await facilitator(action, { ...p, accepted: r }, r);
      return (action === 'verify' ? body.invalidReason : body.errorReason) as string | undefined;
    };
    for (const action of ['verify', 'settle'] as const) {
      assert.equal(
        await reasonOf(action, payload, { payTo: stranger }),
        'invalid_permit2_recipient_mismatch',
      );
      assert.equal(await reasonOf(action, payload, { asset: stranger }), 'unsupported_asset');
      assert.equal(await reasonOf(action, payload, { network: 'eip155:8453' }), 'invalid_network');
      assert.equal(
        await reasonOf(action, await signedPermit(buyer, { spender: EXACT_PERMIT2_PROXY_ADDRESS })),
        'invalid_permit2_spender',
      );
      assert.equal(
        await reasonOf(action, await signedPermit(buyer, { facilitator: stranger })),
        'upto_facilitator_mismatch',
      );
    }
    // The maximum must be what the 402 offered; a maximum raised after signing does not verify.
    assert.equal(await reasonOf('verify', payload, { amount: '49999' }), 'permit2_amount_mismatch');
    const raised = structuredClone(payload);
    (raised.payload.permit2Authorization as { permitted: { amount: string } }).permitted.amount = '60000';
    assert.equal(await reasonOf('verify', raised, { amount: '60000' }), 'invalid_permit2_signature');
    assert.equal(await reasonOf('settle', raised, { amount: '55000' }), 'invalid_permit2_signature');
    // A permit signed to another recipient, presented for this seller's requirements.
    assert.equal(
      await reasonOf('settle', await signedPermit(buyer, { to: stranger })),
      'invalid_permit2_recipient_mismatch',
    );
    // The upto payload offered as exact: the exact scheme refuses the spender; nothing is settled.
    assert.equal(await reasonOf('settle', payload, { scheme: 'exact' }), 'invalid_permit2_spender');
    // x402 v1 has no upto.
    const v1 = await api(seller.key, 'POST', '/facilitator/verify', {
      x402Version: 1,
      paymentPayload: { x402Version: 1, scheme: 'upto', network, payload: payload.payload },
      paymentRequirements: {
        ...payload.accepted,
        maxAmountRequired: MAX.toString(),
        resource: 'https://a.example/',
      },
    });
    assert.equal(v1.body.invalidReason, 'invalid_scheme');
    assert.equal(await balanceOf(buyer.address), 1_000_000n);
    // The untouched payload still settles.
    assert.equal(
      (await facilitator('settle', payload, { ...payload.accepted, amount: '1000' })).success,
      true,
    );
    assert.equal(await balanceOf(buyer.address), 1_000_000n - 1000n);
  });

  it('another account settling a settled payload is answered duplicate_settlement and records nothing; an exact Permit2 payload is no upto payload', async () => {
    const buyer = await newBuyer();
    const payload = await uptoPayload(buyer);
    const first = await facilitator('settle', payload, { ...payload.accepted, amount: '3000' });
    assert.deepEqual([first.success, first.amount], [true, '3000']);
    const other = await gw.newCaller('premium');
    const squatted = await api(other.key, 'POST', '/facilitator/settle', {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: { ...payload.accepted, amount: '40000' },
    });
    assert.deepEqual(
      [squatted.body.success, squatted.body.errorReason, squatted.body.transaction, squatted.body.paymentId],
      [false, 'duplicate_settlement', first.transaction, undefined],
    );
    assert.equal(await balanceOf(buyer.address), 1_000_000n - 3000n);
    // An exact Permit2 permit (witness without a facilitator, spender the exact proxy) offered as upto.
    const exactLike = structuredClone(payload);
    const auth = exactLike.payload.permit2Authorization as {
      spender: string;
      witness: Record<string, unknown>;
    };
    auth.spender = EXACT_PERMIT2_PROXY_ADDRESS;
    delete auth.witness.facilitator;
    const refused = await facilitator('settle', exactLike, { ...exactLike.accepted, amount: '1000' });
    assert.deepEqual([refused.success, refused.errorReason], [false, 'invalid_payload']);
  });

  it('the fee budget and the minimum settled bind upto as exact: the actual amount below the minimum, or a fee past the budget, settles nothing', async () => {
    const strict = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      feeBudget: { budgets: { evm: '0.000000000000000001' }, minimums: { USDC: '0.01' } },
    });
    try {
      await strict.services.facilitator.start();
      const caller = await strict.newCaller('premium');
      const facilitatorOf = getAddress(
        strict.services.facilitator.supported().signers['eip155:*']?.[0] ?? '0x',
      );
      const buyer = await newBuyer();
      const requirements = requirementsFor({
        extra: { assetTransferMethod: 'permit2', facilitatorAddress: facilitatorOf },
      });
      const payload = await uptoPayload(buyer, requirements);
      const call = async (action: 'verify' | 'settle', amount: string) =>
        callAs(strict, caller.key, 'POST', `/facilitator/${action}`, {
          x402Version: 2,
          paymentPayload: payload,
          paymentRequirements: { ...requirements, amount },
        });
      assert.equal((await call('verify', MAX.toString())).body.isValid, true, 'a maximum above the minimum');
      const small = await call('settle', '9999');
      assert.deepEqual([small.body.success, small.body.errorReason], [false, 'amount_below_minimum']);
      const drained = await call('settle', '20000');
      assert.deepEqual([drained.status, drained.body.error?.code], [429, 'FEE_BUDGET_EXCEEDED']);
      assert.equal(await balanceOf(buyer.address), 1_000_000n);
      // The payload was never claimed: the seller's own facilitator (another one) cannot settle it either.
      const elsewhere = await facilitator('settle', payload, { ...requirements, amount: '20000' });
      assert.deepEqual([elsewhere.success, elsewhere.errorReason], [false, 'upto_facilitator_mismatch']);
    } finally {
      await strict.close();
    }
  });

  it('the proxy lets only the witness’s facilitator settle: the buyer’s or a stranger’s own call reverts', async () => {
    const buyer = await newBuyer();
    const payload = await uptoPayload(buyer);
    const p = payload.payload.permit2Authorization as {
      permitted: { token: Address; amount: string };
      nonce: string;
      deadline: string;
      witness: { to: Address; facilitator: Address; validAfter: string };
    };
    const wallet = createWalletClient({ account: buyer, transport: http(evm.anvil.rpcUrl) });
    await assert.rejects(
      wallet.writeContract({
        chain: null,
        address: UPTO_PERMIT2_PROXY_ADDRESS,
        abi: UPTO_PERMIT2_PROXY_ABI,
        functionName: 'settle',
        args: [
          {
            permitted: { token: p.permitted.token, amount: BigInt(p.permitted.amount) },
            nonce: BigInt(p.nonce),
            deadline: BigInt(p.deadline),
          },
          MAX,
          buyer.address,
          { to: p.witness.to, facilitator: p.witness.facilitator, validAfter: 0n },
          payload.payload.signature as Hex,
        ],
      }),
      /UnauthorizedFacilitator|reverted/,
    );
    assert.equal(await balanceOf(buyer.address), 1_000_000n);
  });
});
