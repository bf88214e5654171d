import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import { x402Client } from '@x402/core/client';
import {
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { declareEip2612GasSponsoringExtension } from '@x402/extensions';
import { wrapFetchWithPayment } from '@x402/fetch';
import {
  x402ResourceServer as HonoResourceServer,
  paymentMiddleware as honoPaymentMiddleware,
} from '@x402/hono';
import { Hono } from 'hono';
import {
  type Address,
  bytesToHex,
  createPublicClient,
  createWalletClient,
  decodeFunctionData,
  getAddress,
  type Hex,
  http,
  parseAbi,
  parseTransaction,
  toFunctionSelector,
} from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { eip2612PermitOf, eip2612PermitUsable } from '../../../src/chains/evm/eip2612-gas-sponsoring.ts';
import { anvilEndpoints } from '../../../src/chains/evm/embedded-evm.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from '../../../src/chains/evm/permit2-proxy-abi.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { feeDayOf } from '../../../src/domain/sponsored-fees.ts';
import { callAs } from '../../support/api-caller.ts';
import { signAndBroadcastEvm } from '../../support/evm-local-signer.ts';
import { handReconciler, untilNotPending } from '../../support/hand-reconciler.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { newWatchedEvmWallet } from '../../support/watched-evm-wallet.ts';
import { recordingFetch } from '../../support/x402-buyer.ts';
import { gatewayFacilitator, startShop, type TestShop } from '../../support/x402-shop.ts';

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function nonces(address owner) view returns (uint256)',
]);

const SETTLE_WITH_PERMIT = toFunctionSelector(
  'settleWithPermit((uint256,uint256,bytes32,bytes32,uint8),((address,uint256),uint256,uint256),address,(address,uint256),bytes)',
);

type Eip2612Info = {
  from: string;
  asset: string;
  spender: string;
  amount: string;
  nonce: string;
  deadline: string;
  signature: Hex;
  version: string;
};

/**
 * x402's `eip2612GasSponsoring` extension through gate402's facilitator: a stock `@x402/express` or
 * `@x402/hono` seller asking for `exact` with Permit2 and declaring the extension (the stock
 * `declareEip2612GasSponsoringExtension`), and a stock `@x402/fetch` + `@x402/evm` buyer who never
 * approved Permit2 and holds no ETH: the buyer signs the token's EIP-2612 permit for Permit2 beside its
 * Permit2 permit, and the facilitator settles both in one `settleWithPermit` of x402's proxy.
 */
describe('x402 exact Permit2 with eip2612GasSponsoring', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let seller: { key: string; accountId: string; evm: Address };
  let shop: TestShop | undefined;
  let closeHono: (() => Promise<void>) | undefined;
  let expressUrl: string;
  let honoUrl: string;
  let network: `eip155:${string}`;
  let usdc: Address;
  let chainId: number;

  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);
  const read = (functionName: 'balanceOf' | 'nonces', address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName, args: [address] });
  const allowance = (owner: Address) =>
    chainClient().readContract({
      address: usdc,
      abi: TOKEN_ABI,
      functionName: 'allowance',
      args: [owner, PERMIT2_ADDRESS],
    });

  /** A buyer with 1 USDC and no ETH, who never approved Permit2. */
  const newBuyer = async (eth = 0): Promise<PrivateKeyAccount> => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await api(seller.key, 'POST', '/faucet', {
      address: buyer.address,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    if (eth > 0) {
      const gas = await api(seller.key, 'POST', '/faucet', { address: buyer.address, amount: eth });
      assert.equal(gas.status, 200, JSON.stringify(gas.body));
    }
    return buyer;
  };
  const buyerScheme = (buyer: PrivateKeyAccount) => new EvmBuyerScheme(buyer, { rpcUrl: evm.anvil.rpcUrl });

  const requirementsFor = (changes: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
    scheme: 'exact',
    network,
    asset: usdc,
    amount: '20000',
    payTo: seller.evm,
    maxTimeoutSeconds: 60,
    extra: { assetTransferMethod: 'permit2', name: 'USD Coin', version: '2' },
    ...changes,
  });
  /** What the stock buyer sends for `requirements` when the seller declares `extensions`. */
  const stockPayload = (
    buyer: PrivateKeyAccount,
    requirements: PaymentRequirements,
    extensions: Record<string, unknown> = declareEip2612GasSponsoringExtension(),
  ) =>
    x402Client
      .fromConfig({ schemes: [{ network, client: buyerScheme(buyer) }], spendControls: false })
      .createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://shop.example/r' },
        accepts: [requirements],
        extensions,
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
  const infoOf = (payload: PaymentPayload) => {
    const extension = payload.extensions?.eip2612GasSponsoring as { info: Eip2612Info } | undefined;
    assert.ok(extension !== undefined, 'the stock buyer signed an EIP-2612 permit');
    return extension.info;
  };
  const withInfo = (payload: PaymentPayload, info: Partial<Eip2612Info>): PaymentPayload => ({
    ...payload,
    extensions: { eip2612GasSponsoring: { info: { ...infoOf(payload), ...info } } },
  });
  /** The buyer's own EIP-2612 permit for `spender`, as a wallet would sign it. */
  const signPermit = async (
    signer: PrivateKeyAccount,
    owner: Address,
    fields: { spender?: Address; value: bigint; deadline: bigint; nonce?: bigint },
  ) =>
    signer.signTypedData({
      domain: { name: 'USD Coin', version: '2', chainId, verifyingContract: usdc },
      types: {
        Permit: [
          { name: 'owner', type: 'address' },
          { name: 'spender', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
        ],
      },
      primaryType: 'Permit',
      message: {
        owner,
        spender: fields.spender ?? PERMIT2_ADDRESS,
        value: fields.value,
        nonce: fields.nonce ?? (await read('nonces', owner)),
        deadline: fields.deadline,
      },
    });
  const spentFees = () => gw.store.sponsoredFees.spent(seller.accountId, network, feeDayOf(Date.now()));

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    chainId = Number(network.slice('eip155:'.length));
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
    const accepts = {
      scheme: 'exact',
      network,
      payTo: seller.evm,
      price: {
        amount: '20000',
        asset: usdc,
        extra: { assetTransferMethod: 'permit2', name: 'USD Coin', version: '2' },
      },
    };
    shop = await startShop({
      gatewayUrl,
      key: caller.key,
      schemes: [[network, new EvmSellerScheme()]],
      routes: {
        '/sponsored': {
          accepts,
          extensions: declareEip2612GasSponsoringExtension(),
          description: 'a report paid through Permit2 by a buyer who never approved it',
          body: { report: 'sponsored' },
        },
      },
    });
    expressUrl = `${shop.url}/sponsored`;
    const honoServer = new HonoResourceServer(gatewayFacilitator(gatewayUrl, caller.key));
    honoServer.register(network, new EvmSellerScheme());
    const app = new Hono();
    app.use(
      honoPaymentMiddleware(
        { 'GET /hono-sponsored': { accepts, extensions: declareEip2612GasSponsoringExtension() } },
        honoServer,
      ),
    );
    app.get('/hono-sponsored', (c) => c.json({ report: 'hono' }));
    await new Promise<void>((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        honoUrl = `http://127.0.0.1:${info.port}/hono-sponsored`;
        resolve();
      });
      closeHono = () => new Promise((done) => server.close(() => done()));
    });
  });

  after(async () => {
    await closeHono?.();
    await shop?.close();
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('GET /facilitator/supported lists eip2612GasSponsoring', async () => {
    const { status, body } = await api(seller.key, 'GET', '/facilitator/supported');
    assert.equal(status, 200);
    assert.ok(body.extensions.includes('eip2612GasSponsoring'), JSON.stringify(body.extensions));
  });

  for (const [seller_, url] of [
    ['@x402/express', () => expressUrl],
    ['@x402/hono', () => honoUrl],
  ] as const) {
    it(`a stock ${seller_} seller declaring it is paid by a stock @x402/fetch buyer with no allowance and no ETH, through settleWithPermit, once`, async () => {
      const buyer = await newBuyer();
      const client = x402Client.fromConfig({
        schemes: [{ network, client: buyerScheme(buyer) }],
        spendControls: { allowedAssets: [{ network, asset: usdc }] },
      });
      const { fetch: recording, sent } = recordingFetch();
      const sellerBefore = await read('balanceOf', seller.evm);
      const feesBefore = await spentFees();

      const res = await wrapFetchWithPayment(recording, client)(url());
      assert.equal(res.status, 200, await res.clone().text());
      const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
      assert.deepEqual([settled.success, settled.payer], [true, buyer.address]);
      const payload = decodePaymentSignatureHeader(sent[0] ?? '');
      const info = infoOf(payload);
      assert.deepEqual([info.from, info.spender, info.amount], [buyer.address, PERMIT2_ADDRESS, '20000']);

      // One transaction of the facilitator: the proxy's settleWithPermit.
      const tx = await chainClient().getTransaction({ hash: settled.transaction as Hex });
      assert.equal(tx.to?.toLowerCase(), EXACT_PERMIT2_PROXY_ADDRESS.toLowerCase());
      assert.equal(tx.input.slice(0, 10), SETTLE_WITH_PERMIT);
      assert.equal(await read('balanceOf', buyer.address), 1_000_000n - 20000n);
      assert.equal(await read('balanceOf', seller.evm), sellerBefore + 20000n);
      assert.equal(await chainClient().getBalance({ address: buyer.address }), 0n);
      // The permit approved exactly the amount, which the transfer used up; its nonce is spent.
      assert.equal(await allowance(buyer.address), 0n);
      assert.equal(await read('nonces', buyer.address), 1n);
      // The gas is charged to the seller's fee budget.
      assert.ok((await spentFees()) > feesBefore, 'the settlement is charged to the fee budget');

      // The same payload again: never sent twice.
      const again = await facilitator('settle', payload, payload.accepted);
      assert.deepEqual(
        [again.success, again.errorReason, again.transaction],
        [false, 'duplicate_settlement', settled.transaction],
      );
      assert.equal(await read('balanceOf', buyer.address), 1_000_000n - 20000n);
    });
  }

  it('refuses a permit for another spender, token or owner, for one unit less, expired, forged, or malformed', async () => {
    const buyer = await newBuyer();
    const requirements = requirementsFor();
    const payload = await stockPayload(buyer, requirements);
    const info = infoOf(payload);
    const other = privateKeyToAccount(generatePrivateKey());
    const verify = async (p: PaymentPayload) => {
      const body = await facilitator('verify', p, requirements);
      return body.invalidReason as string | undefined;
    };
    assert.equal(await verify(payload), undefined, 'the untouched payment is valid');
    // For another spender, signed as such: Permit2 would not be approved.
    const deadline = BigInt(info.deadline);
    const forProxy = await signPermit(buyer, buyer.address, {
      spender: EXACT_PERMIT2_PROXY_ADDRESS,
      value: 20000n,
      deadline,
    });
    assert.equal(
      await verify(withInfo(payload, { spender: EXACT_PERMIT2_PROXY_ADDRESS, signature: forProxy })),
      'eip2612_spender_not_permit2',
    );
    assert.equal(await verify(withInfo(payload, { asset: other.address })), 'eip2612_asset_mismatch');
    assert.equal(await verify(withInfo(payload, { from: other.address })), 'eip2612_from_mismatch');
    // One unit less, signed: x402's proxy takes only a permit of exactly the permitted amount.
    const less = await signPermit(buyer, buyer.address, { value: 19999n, deadline });
    assert.equal(
      await verify(withInfo(payload, { amount: '19999', signature: less })),
      'permit2_2612_amount_mismatch',
    );
    // Expired: the permit lapses before a settlement could land.
    const soon = BigInt(Math.floor(Date.now() / 1000) + 3);
    const expiring = await signPermit(buyer, buyer.address, { value: 20000n, deadline: soon });
    assert.equal(
      await verify(withInfo(payload, { deadline: soon.toString(), signature: expiring })),
      'eip2612_deadline_expired',
    );
    // Signed by another key for this owner: the token would refuse it, so Permit2 stays unapproved.
    const forged = await signPermit(other, buyer.address, { value: 20000n, deadline });
    const forgedVerdict = await facilitator('verify', withInfo(payload, { signature: forged }), requirements);
    assert.deepEqual(
      [forgedVerdict.isValid, forgedVerdict.invalidReason],
      [false, 'permit2_allowance_required'],
    );
    assert.match(forgedVerdict.invalidMessage, /EIP-2612/);
    const forgedSettle = await facilitator('settle', withInfo(payload, { signature: forged }), requirements);
    assert.deepEqual([forgedSettle.success, forgedSettle.errorReason], [false, 'permit2_allowance_required']);
    assert.equal(
      await verify(withInfo(payload, { signature: '0x1234' as Hex })),
      'invalid_eip2612_extension_format',
    );
    assert.equal(await verify(withInfo(payload, { amount: 'all' })), 'invalid_eip2612_extension_format');
    // Nothing of it moved money or approved anything.
    assert.equal(await read('balanceOf', buyer.address), 1_000_000n);
    assert.equal(await allowance(buyer.address), 0n);
    assert.equal(await read('nonces', buyer.address), 0n);
  });

  it('refuses a permit replayed with a second payment: its nonce is spent', async () => {
    const buyer = await newBuyer();
    const requirements = requirementsFor();
    const first = await stockPayload(buyer, requirements);
    const settled = await facilitator('settle', first, requirements);
    assert.equal(settled.success, true, JSON.stringify(settled));
    // A second Permit2 payment of the same buyer, carrying the first payment's EIP-2612 permit.
    const second = await stockPayload(buyer, requirements, {});
    assert.equal(second.extensions?.eip2612GasSponsoring, undefined);
    const replay: PaymentPayload = { ...second, extensions: { ...first.extensions } };
    const verdict = await facilitator('verify', replay, requirements);
    assert.deepEqual([verdict.isValid, verdict.invalidReason], [false, 'permit2_allowance_required']);
    assert.match(verdict.invalidMessage, /nonce 0/);
    const settle = await facilitator('settle', replay, requirements);
    assert.deepEqual([settle.success, settle.errorReason], [false, 'permit2_allowance_required']);
    assert.equal(await read('balanceOf', buyer.address), 1_000_000n - 20000n);
  });

  it('a settle that outlives its wait is settlement_pending; a retry finds that settleWithPermit and settles it once', async () => {
    const patient = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: 400,
    });
    const anvil = createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined));
    try {
      await patient.services.facilitator.start();
      const buyer = await newBuyer();
      const requirements = requirementsFor();
      const payload = await stockPayload(buyer, requirements);
      const { accountId } = await patient.newCaller('premium');
      const settle = async () => {
        const res = await patient.services.facilitator.settle(payload, requirements, accountId);
        return [res.success, res.errorReason, res.transaction] as const;
      };
      await anvil.setAutomine(false);
      const [success, reason, transaction] = await settle();
      assert.deepEqual([success, reason], [false, 'settlement_pending']);
      assert.deepEqual(await settle(), [false, 'settlement_pending', transaction]);
      await anvil.mine({ blocks: 1 });
      await anvil.setAutomine(true);
      assert.deepEqual(await settle(), [true, undefined, transaction]);
      assert.deepEqual(await settle(), [false, 'duplicate_settlement', transaction]);
      assert.equal(await read('balanceOf', buyer.address), 1_000_000n - 20000n);
    } finally {
      await anvil.setAutomine(true);
      await patient.close();
    }
  });

  it('a settleWithPermit dropped from the pool and carried by someone else is found by the finisher: settled once, never resent', async () => {
    const patient = await startTestGateway({
      networks: new NetworkRegistry([evm.adapter]),
      confirmTimeoutMs: 400,
    });
    const anvil = createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined));
    try {
      await patient.services.facilitator.start();
      const buyer = await newBuyer();
      const requirements = requirementsFor();
      const payload = await stockPayload(buyer, requirements);
      const { accountId } = await patient.newCaller('premium');
      await anvil.setAutomine(false);
      const pending = await patient.services.facilitator.settle(payload, requirements, accountId);
      assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
      await anvil.dropTransaction({ hash: pending.transaction as Hex });
      await anvil.setAutomine(true);
      const key = patient.services.facilitator.identityOf({
        x402Version: 2,
        scheme: 'exact',
        networkAsSent: network,
        network,
        payload: payload.payload,
        requirements: { ...requirements, amount: 20000n },
      });
      const row = await patient.store.settlements.get(key ?? '');
      assert.ok(row !== undefined);
      // Anyone may submit the buyer's signed call: a third party sends the same settleWithPermit.
      const stored = parseTransaction(bytesToHex(Buffer.from(row.signedTransaction, 'base64')));
      assert.equal(stored.data?.slice(0, 10), SETTLE_WITH_PERMIT);
      const other = privateKeyToAccount(generatePrivateKey());
      await api(seller.key, 'POST', '/faucet', { address: other.address, amount: 1 });
      const carried = await createWalletClient({
        account: other,
        transport: http(evm.anvil.rpcUrl),
      }).sendTransaction({ chain: null, to: EXACT_PERMIT2_PROXY_ADDRESS, data: stored.data ?? '0x' });
      const receipt = await chainClient().waitForTransactionReceipt({ hash: carried, pollingInterval: 20 });
      assert.equal(receipt.status, 'success');
      // The finisher looks for the payment of the stored settleWithPermit and finds the other's carrier.
      let status = await patient.services.facilitator.finish(row, 2_000);
      for (let i = 0; i < 20 && status === 'open'; i++) {
        const now = await patient.store.settlements.get(row.key);
        status = now === undefined ? 'open' : await patient.services.facilitator.finish(now, 2_000);
      }
      assert.equal(status, 'settled');
      const again = await patient.services.facilitator.settle(payload, requirements, accountId);
      assert.deepEqual([again.success, again.errorReason], [false, 'duplicate_settlement']);
      assert.equal(await read('balanceOf', buyer.address), 1_000_000n - 20000n);
    } finally {
      await anvil.setAutomine(true);
      await patient.close();
    }
  });

  it('local mode: POST /transaction/receive builds the seller its own settleWithPermit; once broadcast, the payment is confirmed once', async () => {
    const caller = await gw.newCaller('standard');
    const wallet = await newWatchedEvmWallet(gw, evm, caller.key);
    const reconciler = handReconciler(gw, 'x402-eip2612-local');
    const buyer = await newBuyer();
    const requirements = requirementsFor({ payTo: wallet.address });
    const payload = await stockPayload(buyer, requirements);
    const body = {
      walletAddress: wallet.address,
      paymentProof: encodePaymentSignatureHeader(payload),
      expectedAmount: 0.02,
      asset: 'USDC',
    };
    const built = await callAs(gw, caller.key, 'POST', '/transaction/receive', body);
    assert.equal(built.status, 200, JSON.stringify(built.body));
    const tx = parseTransaction(bytesToHex(Buffer.from(built.body.transaction, 'base64')));
    assert.equal(getAddress(tx.to ?? '0x'), EXACT_PERMIT2_PROXY_ADDRESS);
    const call = decodeFunctionData({ abi: EXACT_PERMIT2_PROXY_ABI, data: tx.data ?? '0x' });
    assert.equal(call.functionName, 'settleWithPermit');
    const hash = await signAndBroadcastEvm(evm.anvil.rpcUrl, built.body.transaction, wallet.privateKey);
    const status = await untilNotPending(
      reconciler,
      () => callAs(gw, caller.key, 'GET', `/payment/status/${built.body.paymentId}`),
      50,
    );
    assert.deepEqual([status.status, status.signature, status.sender], ['confirmed', hash, buyer.address]);
    assert.equal(await read('balanceOf', buyer.address), 1_000_000n - 20000n);
    assert.equal(await read('balanceOf', wallet.address as Address), 20000n);
    const again = await callAs(gw, caller.key, 'POST', '/transaction/receive', body);
    assert.deepEqual([again.status, again.body.error.details.paymentProof], [422, 'already_used']);
  });

  it('a permit of a contract without EIP-2612 (or of no contract) is not usable, and never a chain error', async () => {
    const buyer = await newBuyer();
    const payload = await stockPayload(buyer, requirementsFor());
    const permit = eip2612PermitOf({ extensions: payload.extensions });
    assert.ok(permit !== undefined && !('malformed' in permit));
    const client = chainClient();
    assert.equal(await eip2612PermitUsable(client, permit), true, 'the untouched permit is usable');
    // Permit2 has a DOMAIN_SEPARATOR but no nonces(owner); an address without code answers nothing.
    assert.equal(await eip2612PermitUsable(client, { ...permit, asset: PERMIT2_ADDRESS }), false);
    const nobody = privateKeyToAccount(generatePrivateKey()).address;
    assert.equal(await eip2612PermitUsable(client, { ...permit, asset: nobody }), false);
  });
});
