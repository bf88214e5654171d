import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH, ensurePermit2 } from '@gate402/anvil';
import { x402Client } from '@x402/core/client';
import {
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { createPermit2ApprovalTx } from '@x402/evm';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { wrapFetchWithPayment } from '@x402/fetch';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  type Hex,
  http,
  keccak256,
  parseAbi,
  toHex,
} from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { anvilEndpoints } from '../../../src/chains/evm/embedded-evm.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from '../../../src/chains/evm/permit2-proxy-abi.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { evmPayload, recordingFetch } from '../../support/x402-buyer.ts';
import { startShop, type TestShop } from '../../support/x402-shop.ts';

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
]);

/**
 * x402 `exact` with Permit2 on the embedded anvil: Permit2 deployed at its canonical address from its
 * published creation code, x402's proxy interface at its canonical address, and a stock `@x402/fetch` +
 * `@x402/evm` buyer (who approved Permit2 once) paying a stock `@x402/express` seller whose facilitator
 * is gate402 and whose requirement asks for `assetTransferMethod: "permit2"`.
 */
describe('x402 exact on EVM with Permit2', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let seller: { key: string; evm: Address };
  let shop: TestShop | undefined;
  let shopUrl: string;
  let network: `eip155:${string}`;
  let usdc: Address;

  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);
  const balanceOf = (address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] });

  /** A buyer with ETH for gas and 1 USDC, who has (or has not yet) approved Permit2 for the token. */
  const newBuyer = async (approve: boolean): Promise<PrivateKeyAccount> => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    for (const body of [
      { address: buyer.address, amount: 1 },
      { address: buyer.address, amount: 1, token: 'USDC' },
    ]) {
      const funded = await api(seller.key, 'POST', '/faucet', body);
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    if (approve) {
      // The one-time approval x402's scheme text asks of the buyer (its option A), as @x402/evm builds it.
      const wallet = createWalletClient({ account: buyer, transport: http(evm.anvil.rpcUrl) });
      const hash = await wallet.sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null });
      const receipt = await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 });
      assert.equal(receipt.status, 'success');
    }
    return buyer;
  };

  const requirementsFor = (changes: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
    scheme: 'exact',
    network,
    asset: usdc,
    amount: '20000',
    payTo: seller.evm,
    maxTimeoutSeconds: 60,
    extra: { assetTransferMethod: 'permit2' },
    ...changes,
  });
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
      evm: (await api(caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
    shop = await startShop({
      gatewayUrl,
      key: caller.key,
      schemes: [[network, new EvmSellerScheme()]],
      routes: {
        '/permit2-report': {
          accepts: {
            scheme: 'exact',
            network,
            payTo: seller.evm,
            price: { amount: '20000', asset: usdc, extra: { assetTransferMethod: 'permit2' } },
          },
          description: 'a report paid in anvil USDC through Permit2',
          body: { report: 'permit2' },
        },
      },
    });
    shopUrl = `${shop.url}/permit2-report`;
  });

  after(async () => {
    await shop?.close();
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('the embedded anvil carries Permit2 and the proxy at their canonical addresses, once', async () => {
    const client = chainClient();
    const chainId = await client.getChainId();
    // Permit2's domain is computed for this chain and this address: the deployment is a real one.
    const domainSeparator = await client.readContract({
      address: PERMIT2_ADDRESS,
      abi: parseAbi(['function DOMAIN_SEPARATOR() view returns (bytes32)']),
      functionName: 'DOMAIN_SEPARATOR',
    });
    const expected = keccak256(
      encodeAbiParameters(
        [{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }, { type: 'address' }],
        [
          keccak256(toHex('EIP712Domain(string name,uint256 chainId,address verifyingContract)')),
          keccak256(toHex('Permit2')),
          BigInt(chainId),
          PERMIT2_ADDRESS,
        ],
      ),
    );
    assert.equal(domainSeparator, expected);
    const proxyCode = await client.getCode({ address: EXACT_PERMIT2_PROXY_ADDRESS });
    assert.equal(keccak256(proxyCode ?? '0x'), EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH);
    const proxiedPermit2 = await client.readContract({
      address: EXACT_PERMIT2_PROXY_ADDRESS,
      abi: EXACT_PERMIT2_PROXY_ABI,
      functionName: 'PERMIT2',
    });
    assert.equal(proxiedPermit2, PERMIT2_ADDRESS);
    // A second start on the same state finds both and changes nothing.
    const again = await ensurePermit2(createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined)), {
      deployer: evm.operator as Address,
    });
    assert.deepEqual(again, { permit2Deployed: false, proxyPlaced: false });
  });

  it('offers permit2 beside eip3009 in /facilitator/supported', async () => {
    const { status, body } = await api(seller.key, 'GET', '/facilitator/supported');
    assert.equal(status, 200);
    const kind = (body.kinds as { network: string; extra?: Record<string, unknown> }[]).find(
      (k) => k.network === network,
    );
    assert.deepEqual(kind?.extra, { assetTransferMethods: ['eip3009', 'permit2'] });
  });

  it('@x402/fetch + @x402/evm pays the @x402/express seller with Permit2 through gate402 → 200, once', async () => {
    const buyer = await newBuyer(true);
    const client = x402Client.fromConfig({
      schemes: [{ network, client: new EvmBuyerScheme(buyer) }],
      spendControls: { allowedAssets: [{ network, asset: usdc }] },
    });
    const { fetch: recording, sent } = recordingFetch();
    const [buyerBefore, sellerBefore] = await Promise.all([balanceOf(buyer.address), balanceOf(seller.evm)]);

    const res = await wrapFetchWithPayment(recording, client)(shopUrl);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { report: 'permit2' });
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.deepEqual([settled.success, settled.payer, settled.network], [true, buyer.address, network]);
    const payload = decodePaymentSignatureHeader(sent[0] ?? '');
    const permit = payload.payload.permit2Authorization as { spender: string; witness: { to: string } };
    assert.equal(permit.spender, EXACT_PERMIT2_PROXY_ADDRESS);
    assert.equal(permit.witness.to, seller.evm);

    // The settlement is the proxy's settle, sent and paid for by the facilitator's fee payer.
    const tx = await chainClient().getTransaction({ hash: settled.transaction as Hex });
    assert.equal(tx.to?.toLowerCase(), EXACT_PERMIT2_PROXY_ADDRESS.toLowerCase());
    const supported = await api(seller.key, 'GET', '/facilitator/supported');
    assert.deepEqual(
      [tx.from.toLowerCase()],
      supported.body.signers['eip155:*'].map((s: string) => s.toLowerCase()),
    );
    assert.equal(await balanceOf(buyer.address), buyerBefore - 20000n);
    assert.equal(await balanceOf(seller.evm), sellerBefore + 20000n);
    const history = await api(seller.key, 'GET', `/payment/history/${seller.evm}`);
    assert.deepEqual(
      [history.body.total, history.body.payments[0].amount, history.body.payments[0].sender],
      [1, 0.02, buyer.address],
    );

    // The same permit again, through verify and settle: refused by its (owner, nonce), never sent twice.
    const verifyAgain = await facilitator('verify', payload, payload.accepted);
    assert.deepEqual([verifyAgain.isValid, verifyAgain.invalidReason], [false, 'duplicate_settlement']);
    const again = await facilitator('settle', payload, payload.accepted);
    assert.deepEqual(
      [again.success, again.errorReason, again.transaction],
      [false, 'duplicate_settlement', settled.transaction],
    );
    assert.equal(await balanceOf(buyer.address), buyerBefore - 20000n);
    assert.equal((await api(seller.key, 'GET', `/payment/history/${seller.evm}`)).body.total, 1);
  });

  it('POST /payment/receive takes a Permit2 PAYMENT-SIGNATURE value: settled by the built-in facilitator, once', async () => {
    const buyer = await newBuyer(true);
    const payload = await evmPayload(buyer, requirementsFor());
    const body = {
      walletAddress: seller.evm,
      paymentProof: encodePaymentSignatureHeader(payload),
      expectedAmount: 0.02,
      asset: 'USDC',
    };
    const received = await api(seller.key, 'POST', '/payment/receive', body);
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.deepEqual(
      [received.body.amountReceived, received.body.sender, received.body.status],
      [0.02, buyer.address, 'confirmed'],
    );
    assert.equal(await balanceOf(buyer.address), 1_000_000n - 20000n);
    const again = await api(seller.key, 'POST', '/payment/receive', body);
    assert.deepEqual(
      [again.status, again.body.error.code, again.body.error.details.paymentProof],
      [422, 'INVALID_PAYMENT_PROOF', 'already_used'],
    );
  });

  it('a settle that outlives its wait is settlement_pending with its transaction; retries look at that one, then settle it once', async () => {
    const patient = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: 400,
    });
    const anvil = createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined));
    try {
      await patient.services.facilitator.start();
      const buyer = await newBuyer(true);
      const requirements = requirementsFor();
      const payload = await evmPayload(buyer, requirements);
      const buyerBefore = await balanceOf(buyer.address);
      const { accountId } = await patient.newCaller('premium');
      const settle = async () => {
        const res = await patient.services.facilitator.settle(payload, requirements, accountId);
        return [res.success, res.errorReason, res.transaction] as const;
      };
      // Nothing is mined until the test says so.
      await anvil.setAutomine(false);
      const [success, reason, transaction] = await settle();
      assert.deepEqual([success, reason], [false, 'settlement_pending']);
      assert.match(transaction, /^0x[0-9a-f]{64}$/);
      assert.deepEqual(await settle(), [false, 'settlement_pending', transaction]);
      await anvil.mine({ blocks: 1 });
      await anvil.setAutomine(true);
      assert.deepEqual(await settle(), [true, undefined, transaction]);
      assert.deepEqual(await settle(), [false, 'duplicate_settlement', transaction]);
      assert.equal(await balanceOf(buyer.address), buyerBefore - 20000n);
    } finally {
      await anvil.setAutomine(true);
      await patient.close();
    }
  });

  it('refuses a buyer who has not approved Permit2, with the reason that tells the buyer what to do', async () => {
    const buyer = await newBuyer(false);
    const requirements = requirementsFor();
    const verdict = await facilitator('verify', await evmPayload(buyer, requirements), requirements);
    assert.deepEqual(
      [verdict.isValid, verdict.invalidReason, verdict.payer],
      [false, 'permit2_allowance_required', buyer.address],
    );
    assert.match(verdict.invalidMessage, /approve/);
  });

  it('refuses another recipient, amount or token, a forged or expired permit, another spender, and a mismatched method', async () => {
    const buyer = await newBuyer(true);
    const requirements = requirementsFor();
    const payload = await evmPayload(buyer, requirements);
    const permit = payload.payload.permit2Authorization as Record<string, unknown> & {
      witness: Record<string, unknown>;
    };
    const verify = async (changes: Partial<PaymentRequirements>, tampered = payload.payload) => {
      const r = requirementsFor(changes);
      const body = await facilitator('verify', { ...payload, payload: tampered, accepted: r }, r);
      return body.invalidReason as string | undefined;
    };
    assert.equal(await verify({}), undefined, 'the untouched payment is valid');
    assert.equal(
      await verify({ payTo: privateKeyToAccount(generatePrivateKey()).address }),
      'invalid_permit2_recipient_mismatch',
    );
    assert.equal(await verify({ amount: '20001' }), 'permit2_amount_mismatch');
    // A token the facilitator does not know is refused before anything else: it would pay that contract's gas.
    assert.equal(
      await verify({ asset: privateKeyToAccount(generatePrivateKey()).address }),
      'unsupported_asset',
    );
    assert.equal(
      await verify({}, { ...payload.payload, permit2Authorization: { ...permit, nonce: '1' } }),
      'invalid_permit2_signature',
    );
    assert.equal(
      await verify(
        {},
        {
          ...payload.payload,
          permit2Authorization: { ...permit, spender: privateKeyToAccount(generatePrivateKey()).address },
        },
      ),
      'invalid_permit2_spender',
    );
    assert.equal(
      await verify(
        {},
        {
          ...payload.payload,
          permit2Authorization: { ...permit, witness: { ...permit.witness, validAfter: 'soon' } },
        },
      ),
      'invalid_payload',
    );
    assert.equal(await verify({ extra: { assetTransferMethod: 'eip3009' } }), 'invalid_payload');
    assert.equal(await verify({ extra: { assetTransferMethod: 'erc7710' } }), 'invalid_payload');
    // Not a name at all but thousands of nested arrays (written by hand: JSON.stringify gives up on
    // them): refused too, where describing it in the message used to run out of stack (500).
    const r = requirementsFor({ extra: { assetTransferMethod: '@' } });
    const deep = await gw.app.inject({
      method: 'POST',
      url: '/facilitator/verify',
      headers: { authorization: `Bearer ${seller.key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({
        x402Version: 2,
        paymentPayload: { ...payload, accepted: r },
        paymentRequirements: r,
      }).replaceAll('"@"', `${'['.repeat(6000)}${']'.repeat(6000)}`),
    });
    assert.equal(deep.statusCode, 200, deep.body);
    assert.equal(deep.json().invalidReason, 'invalid_payload');
    // @x402/evm signs deadline = now + maxTimeoutSeconds: too close to now to settle in time.
    const shortLived = requirementsFor({ maxTimeoutSeconds: 3 });
    const expired = await facilitator('verify', await evmPayload(buyer, shortLived), shortLived);
    assert.equal(expired.invalidReason, 'permit2_deadline_expired');
    // Nothing of it moved money.
    assert.equal(await balanceOf(buyer.address), 1_000_000n);
  });

  it('refuses a permit whose Permit2 nonce was already spent on chain by someone else', async () => {
    const buyer = await newBuyer(true);
    const requirements = requirementsFor();
    const payload = await evmPayload(buyer, requirements);
    const p = payload.payload.permit2Authorization as {
      permitted: { token: Address; amount: string };
      nonce: string;
      deadline: string;
      witness: { to: Address; validAfter: string };
    };
    // The buyer submits the proxy call itself (anyone may): the seller is paid, and the permit is spent.
    const wallet = createWalletClient({ account: buyer, transport: http(evm.anvil.rpcUrl) });
    const hash = await wallet.writeContract({
      chain: null,
      address: EXACT_PERMIT2_PROXY_ADDRESS,
      abi: EXACT_PERMIT2_PROXY_ABI,
      functionName: 'settle',
      args: [
        {
          permitted: { token: p.permitted.token, amount: BigInt(p.permitted.amount) },
          nonce: BigInt(p.nonce),
          deadline: BigInt(p.deadline),
        },
        buyer.address,
        { to: p.witness.to, validAfter: BigInt(p.witness.validAfter) },
        payload.payload.signature as Hex,
      ],
    });
    assert.equal(
      (await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 })).status,
      'success',
    );
    const verdict = await facilitator('verify', payload, requirements);
    assert.deepEqual([verdict.isValid, verdict.invalidReason], [false, 'permit2_invalid_nonce']);
    const settle = await facilitator('settle', payload, requirements);
    assert.deepEqual([settle.success, settle.errorReason], [false, 'permit2_invalid_nonce']);
    assert.equal(await balanceOf(buyer.address), 1_000_000n - 20000n);
  });
});
