import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import {
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import { type Address, createPublicClient, createWalletClient, type Hex, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment as wrapV1FetchWithPayment } from 'x402-fetch';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs, callerOf } from '../../support/api-caller.ts';
import { custodialKeyOf, watchAddress } from '../../support/proof-of-control.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import {
  evmExactRequirements,
  evmPayload,
  newV1SvmBuyer,
  recordingFetch,
  spendNonceOnAnotherAuthorization,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';
import { gatewayFacilitator, startShop, type TestShop } from '../../support/x402-shop.ts';

const TRANSFER_WITH_AUTHORIZATION_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
]);

/** An EIP-3009 `exact` payload as stock @x402/evm signs it. */
interface EvmPayload {
  signature: Hex;
  authorization: {
    from: Address;
    to: Address;
    value: string;
    validAfter: string;
    validBefore: string;
    nonce: Hex;
  };
}

/**
 * Stock x402 parts against gate402's facilitator, on the embedded chains: an `@x402/express` seller
 * whose facilitator is gate402 (`HTTPFacilitatorClient` at /facilitator with a Bearer key), and an
 * `@x402/fetch` buyer paying with `@x402/svm` (the localnet reached under devnet's id, rpcUrl
 * overridden) or `@x402/evm` (anvil, eip155:31337).
 */
describe('x402 facilitator with stock @x402 sellers and buyers', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let gatewayUrl: string;
  let seller: { key: string; accountId: string; solana: string; evm: string };
  let shop: TestShop | undefined;
  let shopUrl: string;

  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]) });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;

    const caller = await gw.newCaller('premium');
    const solanaWallet = await api(caller.key, 'POST', '/wallets', { chain: 'solana' });
    const evmWallet = await api(caller.key, 'POST', '/wallets', { chain: 'evm' });
    seller = {
      key: caller.key,
      accountId: caller.accountId,
      solana: solanaWallet.body.address,
      evm: evmWallet.body.address,
    };
    // x402 `exact` does not create the seller's token account: a first USDC mint does.
    await api(caller.key, 'POST', '/faucet', { address: seller.solana, amount: 0.01, token: 'USDC' });

    const evmNetwork = evm.adapter.info.id as `eip155:${string}`;
    shop = await startShop({
      gatewayUrl,
      key: caller.key,
      schemes: [
        [SOLANA_DEVNET_ID, new SvmSellerScheme()],
        [evmNetwork, new EvmSellerScheme()],
      ],
      routes: {
        '/solana-report': {
          accepts: {
            scheme: 'exact',
            network: SOLANA_DEVNET_ID,
            payTo: seller.solana,
            price: { amount: '10000', asset: chain.localnet.usdcMint.address },
          },
          description: 'a report paid in localnet USDC',
          body: { report: 'solana' },
        },
        '/evm-report': {
          accepts: {
            scheme: 'exact',
            network: evmNetwork,
            payTo: seller.evm,
            price: { amount: '20000', asset: evm.usdc.address, extra: { name: 'USD Coin', version: '2' } },
          },
          description: 'a report paid in anvil USDC',
          body: { report: 'evm' },
        },
      },
    });
    shopUrl = shop.url;
  });

  after(async () => {
    await shop?.close();
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  it('answers /facilitator/supported with exact on every network, the Solana fee payer, and v1 names', async () => {
    const caller = seller;
    const { status, body } = await api(caller.key, 'GET', '/facilitator/supported');
    assert.equal(status, 200);
    const all = body.kinds as {
      x402Version: number;
      scheme: string;
      network: string;
      extra?: { feePayer?: string };
    }[];
    const kinds = all.filter((k) => k.scheme === 'exact');
    const feePayer = kinds.find((k) => k.network === chain.adapter.info.id)?.extra?.feePayer;
    assert.ok(feePayer !== undefined && body.signers['solana:*'].includes(feePayer));
    // Beside exact: upto (x402 v2 only) where the chain carries x402's upto proxy, as the embedded anvil does.
    assert.deepEqual(
      all.filter((k) => k.scheme === 'upto' && k.network === evm.adapter.info.id).map((k) => k.x402Version),
      [2],
    );
    assert.deepEqual(
      kinds.map((k) => `${k.x402Version}:${k.network}`).sort(),
      [
        `2:${chain.adapter.info.id}`,
        `2:${evm.adapter.info.id}`,
        `2:${SOLANA_DEVNET_ID}`,
        '1:solana-devnet',
      ].sort(),
    );
    assert.equal(body.signers['eip155:*'].length, 1);
  });

  it('refuses the facilitator to a Standard plan (feature facilitator) and to a missing key', async () => {
    const standard = await gw.newCaller('standard');
    assert.equal((await api(standard.key, 'GET', '/facilitator/supported')).status, 403);
    const res = await gw.app.inject({ method: 'GET', url: '/facilitator/supported' });
    assert.equal(res.statusCode, 401);
  });

  it('Solana: @x402/fetch + @x402/svm pays the @x402/express seller through gate402 → 200, PAYMENT-RESPONSE, and the payment is the seller’s', async () => {
    const buyer = await generateKeyPairSigner();
    const funded = await api(seller.key, 'POST', '/faucet', {
      address: buyer.address,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    const client = x402Client.fromConfig({
      schemes: [
        { network: SOLANA_DEVNET_ID, client: new SvmBuyerScheme(buyer, { rpcUrl: chain.localnet.rpcUrl }) },
      ],
      spendControls: {
        allowedAssets: [{ network: SOLANA_DEVNET_ID, asset: chain.localnet.usdcMint.address }],
      },
    });
    const { fetch: recording, sent } = recordingFetch();
    const pay = wrapFetchWithPayment(recording, client);
    const res = await pay(`${shopUrl}/solana-report`);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { report: 'solana' });
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.equal(settled.success, true);
    assert.equal(settled.payer, buyer.address);

    const history = await api(seller.key, 'GET', `/payment/history/${seller.solana}`);
    const entry = history.body.payments.find((p: { paymentId: string }) => p.paymentId !== undefined);
    assert.equal(entry.type, 'received');
    assert.equal(entry.amount, 0.01);
    assert.equal(entry.sender, buyer.address);
    const status = await api(seller.key, 'GET', `/payment/status/${entry.paymentId}`);
    assert.equal(status.body.signature, settled.transaction);
    assert.equal(status.body.status, 'confirmed');
    assert.deepEqual(status.body.asset, {
      symbol: 'USDC',
      address: chain.localnet.usdcMint.address,
      decimals: 6,
    });
    // The stock seller's 402 names the resource, the buyer's payload repeats it: the payment records it.
    const paidFor = decodePaymentSignatureHeader(sent[0] ?? '').resource?.url;
    assert.match(paidFor ?? '', /\/solana-report$/);
    assert.equal(status.body.resource, paidFor);
    // Written to the outbox with the payment, so the stream and webhooks carry it.
    const events = await gw.store.events.listAfter(seller.accountId, 0, 1_000);
    const event = events.find((e) => e.paymentId === entry.paymentId);
    assert.equal(event?.type, 'payment.received');
    assert.equal(event?.data.amount, 0.01);

    // The same payment again, straight to the facilitator and through the seller: refused, never re-sent.
    assert.equal(sent.length, 1);
    const payload = decodePaymentSignatureHeader(sent[0] ?? '');
    const request = { x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted };
    const again = await api(seller.key, 'POST', '/facilitator/settle', request);
    assert.equal(again.status, 200);
    assert.equal(again.body.success, false);
    assert.equal(again.body.errorReason, 'duplicate_settlement');
    assert.equal(again.body.transaction, settled.transaction);
    const verified = await api(seller.key, 'POST', '/facilitator/verify', request);
    assert.deepEqual(
      { isValid: verified.body.isValid, invalidReason: verified.body.invalidReason },
      { isValid: false, invalidReason: 'duplicate_settlement' },
    );
    const replay = await fetch(`${shopUrl}/solana-report`, {
      headers: { 'payment-signature': sent[0] ?? '' },
    });
    assert.equal(replay.status, 402);
    const payments = await api(seller.key, 'GET', `/payment/history/${seller.solana}`);
    assert.equal(payments.body.total, 1);
  });

  it('EVM: @x402/fetch + @x402/evm pays the @x402/express seller through gate402 → 200 and PAYMENT-RESPONSE', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await api(seller.key, 'POST', '/faucet', {
      address: buyer.address,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    const client = x402Client.fromConfig({
      schemes: [{ network: evm.adapter.info.id as `eip155:${string}`, client: new EvmBuyerScheme(buyer) }],
      spendControls: {
        allowedAssets: [{ network: evm.adapter.info.id as `eip155:${string}`, asset: evm.usdc.address }],
      },
    });
    const { fetch: recording, sent } = recordingFetch();
    const res = await wrapFetchWithPayment(recording, client)(`${shopUrl}/evm-report`);
    assert.equal(res.status, 200, await res.clone().text());
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.equal(settled.success, true);
    assert.equal(settled.payer, buyer.address);
    const history = await api(seller.key, 'GET', `/payment/history/${seller.evm}`);
    assert.equal(history.body.payments[0].amount, 0.02);
    assert.equal(history.body.payments[0].sender, buyer.address);
    assert.deepEqual(history.body.payments[0].asset, {
      symbol: 'USDC',
      address: evm.usdc.address,
      decimals: 6,
    });

    // The same authorization again: refused by its (signer, nonce), never submitted twice.
    const payload = decodePaymentSignatureHeader(sent[0] ?? '');
    const again = await api(seller.key, 'POST', '/facilitator/settle', {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: payload.accepted,
    });
    assert.deepEqual(
      [again.body.success, again.body.errorReason, again.body.transaction],
      [false, 'duplicate_settlement', settled.transaction],
    );
    assert.equal((await api(seller.key, 'GET', `/payment/history/${seller.evm}`)).body.total, 1);
  });

  it('EVM: refuses a token it does not know (it would pay that contract’s gas), another value, a forged domain and a payer without funds', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const requirements = evmExactRequirements(evm, { amount: '20000', payTo: seller.evm });
    const paymentPayload = await evmPayload(buyer, requirements);
    const verify = async (changes: Record<string, unknown>) => {
      const r = { ...requirements, ...changes };
      const res = await api(seller.key, 'POST', '/facilitator/verify', {
        x402Version: 2,
        paymentPayload: { ...paymentPayload, accepted: r },
        paymentRequirements: r,
      });
      return res.body.invalidReason as string | undefined;
    };
    assert.equal(
      await verify({ asset: privateKeyToAccount(generatePrivateKey()).address }),
      'unsupported_asset',
    );
    assert.equal(await verify({ amount: '20001' }), 'invalid_exact_evm_payload_authorization_value_mismatch');
    assert.equal(await verify({ extra: { name: 'USD Coin', version: '1' } }), 'invalid_exact_evm_signature');
    assert.equal(await verify({}), 'invalid_exact_evm_insufficient_balance');

    // The same refusals of a v1 payload are answered under x402 1.x's names (v1 buyers and sellers match on them).
    const { amount, ...common } = requirements;
    const verifyV1 = async (changes: Record<string, unknown>) => {
      const r = {
        ...common,
        network: 'eip155:31337',
        maxAmountRequired: amount,
        resource: 'https://shop.example/r',
        description: '',
        mimeType: '',
        ...changes,
      };
      const res = await api(seller.key, 'POST', '/facilitator/verify', {
        x402Version: 1,
        paymentPayload: {
          x402Version: 1,
          scheme: 'exact',
          network: r.network,
          payload: paymentPayload.payload,
        },
        paymentRequirements: r,
      });
      return res.body.invalidReason as string | undefined;
    };
    assert.equal(
      await verifyV1({ extra: { name: 'USD Coin', version: '1' } }),
      'invalid_exact_evm_payload_signature',
    );
    assert.equal(
      await verifyV1({ payTo: privateKeyToAccount(generatePrivateKey()).address }),
      'invalid_exact_evm_payload_recipient_mismatch',
    );
    assert.equal(await verifyV1({}), 'insufficient_funds');
  });

  it('EVM: an authorization used between a settle’s verification and its claim is a duplicate (another settle landed it) or a refusal (someone else did), not 500', async () => {
    const scheme = gw.services.facilitator.schemeFor(evm.adapter.info.id);
    assert.ok(scheme !== undefined);
    const settleWith = async (useMeanwhile: (body: object) => Promise<unknown>) => {
      const buyer = privateKeyToAccount(generatePrivateKey());
      await api(seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
      const requirements = evmExactRequirements(evm, { amount: '20000', payTo: seller.evm });
      const body = {
        x402Version: 2,
        paymentPayload: await evmPayload(buyer, requirements),
        paymentRequirements: requirements,
      };
      // The first settle, once verified, lets the authorization be used before it claims the settlement.
      const prepare = scheme.prepare.bind(scheme);
      let meanwhile: (() => Promise<unknown>) | undefined = () => useMeanwhile(body);
      scheme.prepare = async (payload, req) => {
        const use = meanwhile;
        meanwhile = undefined;
        await use?.();
        return prepare(payload, req);
      };
      try {
        return await api(seller.key, 'POST', '/facilitator/settle', body);
      } finally {
        scheme.prepare = prepare;
      }
    };

    // Another settle of the same payload (here, or on another instance) landed it first.
    let other: { status: number; body: { success: boolean } } | undefined;
    const duplicate = await settleWith(async (body) => {
      other = await api(seller.key, 'POST', '/facilitator/settle', body);
    });
    assert.deepEqual([other?.status, other?.body.success], [200, true]);
    assert.equal(duplicate.status, 200, JSON.stringify(duplicate.body));
    assert.deepEqual([duplicate.body.success, duplicate.body.errorReason], [false, 'duplicate_settlement']);

    // Someone else submitted the authorization itself (the buyer, a watcher of the pool).
    const submitter = privateKeyToAccount(generatePrivateKey());
    await api(seller.key, 'POST', '/faucet', { address: submitter.address, amount: 1 });
    const chain = createWalletClient({ account: submitter, transport: http(evm.anvil.rpcUrl) });
    const refused = await settleWith(async (body) => {
      const { signature, authorization: a } = (body as { paymentPayload: { payload: EvmPayload } })
        .paymentPayload.payload;
      const hash = await chain.writeContract({
        chain: null,
        address: evm.usdc.address as Address,
        abi: TRANSFER_WITH_AUTHORIZATION_ABI,
        functionName: 'transferWithAuthorization',
        args: [
          a.from,
          a.to,
          BigInt(a.value),
          BigInt(a.validAfter),
          BigInt(a.validBefore),
          a.nonce,
          signature,
        ],
      });
      await createPublicClient({ transport: http(evm.anvil.rpcUrl) }).waitForTransactionReceipt({
        hash,
        pollingInterval: 20,
      });
    });
    assert.equal(refused.status, 200, JSON.stringify(refused.body));
    assert.deepEqual(
      [refused.body.success, refused.body.errorReason],
      [false, 'invalid_exact_evm_nonce_already_used'],
    );
  });

  it('EVM: a settled authorization’s signer and nonce with another recipient or value is refused for what it pays, not as the settled payment (duplicate_settlement, already_used), on every route', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await api(seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = evmExactRequirements(evm, { amount: '20000', payTo: seller.evm });
    const paymentPayload = await evmPayload(buyer, requirements);
    const settled = await api(seller.key, 'POST', '/facilitator/settle', {
      x402Version: 2,
      paymentPayload,
      paymentRequirements: requirements,
    });
    assert.equal(settled.body.success, true, JSON.stringify(settled.body));

    const { payload } = paymentPayload as unknown as { payload: EvmPayload };
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    // The same settlement key (signer and nonce), for the seller's own requirements: not that payment.
    const cases = [
      [{ to: stranger }, 'invalid_exact_evm_recipient_mismatch'],
      [{ value: '20001' }, 'invalid_exact_evm_payload_authorization_value_mismatch'],
    ] as const;
    for (const [change, reason] of cases) {
      const altered = {
        ...paymentPayload,
        payload: { ...payload, authorization: { ...payload.authorization, ...change } },
      };
      const body = { x402Version: 2, paymentPayload: altered, paymentRequirements: requirements };
      const verified = await api(seller.key, 'POST', '/facilitator/verify', body);
      assert.deepEqual([verified.body.isValid, verified.body.invalidReason], [false, reason]);
      const again = await api(seller.key, 'POST', '/facilitator/settle', body);
      assert.deepEqual(
        [again.body.success, again.body.errorReason, again.body.transaction],
        [false, reason, ''],
      );
      const header = encodePaymentSignatureHeader(altered);
      const received = await api(seller.key, 'POST', '/payment/receive', {
        walletAddress: seller.evm,
        paymentProof: header,
        expectedAmount: 0.02,
        asset: 'USDC',
      });
      assert.deepEqual(
        [received.status, received.body.error.code, received.body.error.details.paymentProof],
        [422, 'PAYMENT_VERIFICATION_FAILED', reason],
      );
      const checked = await api(seller.key, 'POST', '/v1/payments/verify', {
        payment_proof: header,
        amount: 20000,
        asset: 'USDC',
        recipient: seller.evm,
      });
      assert.deepEqual([checked.body.verified, checked.body.reason], [false, reason]);
    }
    // The payment itself is still the settled one.
    const duplicate = await api(seller.key, 'POST', '/facilitator/verify', {
      x402Version: 2,
      paymentPayload,
      paymentRequirements: requirements,
    });
    assert.deepEqual([duplicate.body.isValid, duplicate.body.invalidReason], [false, 'duplicate_settlement']);
  });

  /** A stock @x402/svm buyer's v2 PAYMENT-SIGNATURE value for `amount` USDC atomic units to `payTo`. */
  const svmPayment = async (payTo: string, feePayer: string, amount = '10000') => {
    const buyer = await generateKeyPairSigner();
    await api(seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = svmExactRequirements(chain, { amount, payTo, feePayer });
    const payload = await svmPayload(chain, buyer, requirements, 'https://shop.example/report');
    return { buyer: buyer.address, header: encodePaymentSignatureHeader(payload) };
  };
  const feePayerOf = async (key: string, on = gw) => {
    const res = await on.app.inject({
      method: 'GET',
      url: '/facilitator/supported',
      headers: { authorization: `Bearer ${key}` },
    });
    return res.json().kinds.find((k: { network: string }) => k.network === SOLANA_DEVNET_ID).extra
      .feePayer as string;
  };

  /**
   * A seller's own gateway (its own storage; facilitatorUrl may reach 127.0.0.1; its schemes started, as
   * `npm start` does, since they read the chain for a payload) with an account watching `wallets`.
   * `asOwner` calls it as that account; `receive` posts /payment/receive through `facilitatorUrl` with
   * the first gateway's key.
   */
  const sellerGatewayWatching = async (wallets: readonly { chain: 'solana' | 'evm'; address: string }[]) => {
    const gateway = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter, evm.adapter]),
      allowPrivateOutboundUrls: true,
    });
    await gateway.services.facilitator.start();
    const owner = await gateway.newCaller('standard');
    const asOwner = (method: 'GET' | 'POST', url: string, payload?: object, headers = {}) =>
      gateway.app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${owner.key}`, ...headers },
        ...(payload === undefined ? {} : { payload }),
      });
    for (const wallet of wallets) {
      // The seller proves control with the key of its wallet on the first gateway.
      const watched = await watchAddress(
        gateway,
        owner.key,
        await custodialKeyOf(gw, seller.accountId, wallet.address),
      );
      assert.equal(watched.statusCode, 200, watched.body);
    }
    const receive = (
      facilitatorUrl: string,
      body: { walletAddress: string; paymentProof: string; expectedAmount: number; asset: string },
      headers = {},
    ) =>
      asOwner(
        'POST',
        '/payment/receive',
        { ...body, facilitatorUrl, facilitatorAuthorization: `Bearer ${seller.key}`, timeout: 20 },
        headers,
      );
    return { gateway, asOwner, receive };
  };

  /**
   * A facilitator at a URL of its own that passes every call to the first gateway's, except as `answer`
   * decides from the call's path: `drop` the connection once the first gateway has answered (an answer
   * lost on the way), or `fail` with a 502 without passing it on (the facilitator unreachable).
   */
  const facilitatorInFront = async (answer: (path: string) => 'pass' | 'drop' | 'fail') => {
    const server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const decision = answer(req.url ?? '');
      if (decision === 'fail') {
        res.writeHead(502).end('bad gateway');
        return;
      }
      const passed = await fetch(`${gatewayUrl}/facilitator${req.url}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' },
        ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
      });
      const text = await passed.text();
      if (decision === 'drop') {
        req.socket.destroy();
        return;
      }
      res.writeHead(passed.status, { 'content-type': 'application/json' }).end(text);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
  };

  it('refuses requirements of 0 atomic units on Solana and EVM (invalid_payment_requirements): the fee payer pays no fee for nothing', async () => {
    const signers = (await api(seller.key, 'GET', '/facilitator/supported')).body.signers;
    const [svmFeePayer, evmFeePayer] = [signers['solana:*'][0], signers['eip155:*'][0]] as [string, Address];
    const svmBuyer = await generateKeyPairSigner();
    const evmBuyer = privateKeyToAccount(generatePrivateKey());
    await api(seller.key, 'POST', '/faucet', { address: svmBuyer.address, amount: 1, token: 'USDC' });
    await api(seller.key, 'POST', '/faucet', { address: evmBuyer.address, amount: 1, token: 'USDC' });
    const svmRequirements = svmExactRequirements(chain, {
      amount: '0',
      payTo: seller.solana,
      feePayer: svmFeePayer,
    });
    const evmRequirements = evmExactRequirements(evm, { amount: '0', payTo: seller.evm });
    // What stock buyers sign for them: a transfer of 0, valid in every other respect (both were settled).
    const requests = [
      {
        x402Version: 2,
        paymentPayload: await svmPayload(chain, svmBuyer, svmRequirements),
        paymentRequirements: svmRequirements,
      },
      {
        x402Version: 2,
        paymentPayload: await evmPayload(evmBuyer, evmRequirements),
        paymentRequirements: evmRequirements,
      },
    ];
    const evmClient = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
    const fees = async () => [
      await chain.adapter.getBalance(svmFeePayer),
      await evmClient.getBalance({ address: evmFeePayer }),
    ];
    const feesBefore = await fees();
    const refusal = {
      reason: 'invalid_payment_requirements',
      message: 'paymentRequirements asks for 0 atomic units: amount must be at least 1',
    };
    for (const request of requests) {
      const verified = await api(seller.key, 'POST', '/facilitator/verify', request);
      assert.deepEqual(verified.body, {
        isValid: false,
        invalidReason: refusal.reason,
        invalidMessage: refusal.message,
      });
      const settled = await api(seller.key, 'POST', '/facilitator/settle', request);
      assert.deepEqual(settled.body, {
        success: false,
        errorReason: refusal.reason,
        errorMessage: refusal.message,
        transaction: '',
        network: request.paymentRequirements.network,
      });
      // v1 names the amount maxAmountRequired.
      const { amount: _, ...common } = request.paymentRequirements;
      const v1 = await gw.services.facilitator.settle(
        { ...request.paymentPayload, ...request.paymentPayload.accepted, x402Version: 1 },
        {
          ...common,
          maxAmountRequired: '0',
          resource: 'https://shop.example/r',
          description: '',
          mimeType: '',
        },
        seller.accountId,
      );
      assert.equal(v1.errorReason, refusal.reason);
      assert.match(v1.errorMessage ?? '', /maxAmountRequired must be at least 1/);
    }
    assert.deepEqual(await fees(), feesBefore, 'neither fee payer paid anything');
    for (const wallet of [seller.solana, seller.evm]) {
      const history = await api(seller.key, 'GET', `/payment/history/${wallet}`);
      assert.equal(
        history.body.payments.some((p: { amount: number }) => p.amount === 0),
        false,
        'no payment of 0 recorded',
      );
    }
    // /payment/receive: a seller's expectedAmount is at least one atomic unit, so such a payload offers too little.
    for (const [walletAddress, payload] of [
      [seller.solana, await svmPayload(chain, svmBuyer, svmRequirements)],
      [seller.evm, await evmPayload(evmBuyer, evmRequirements)],
    ] as const) {
      const received = await api(seller.key, 'POST', '/payment/receive', {
        walletAddress,
        paymentProof: encodePaymentSignatureHeader(payload),
        expectedAmount: 0.000001,
        asset: 'USDC',
      });
      assert.equal(received.status, 422);
      assert.equal(received.body.error.details.paymentProof, 'amount_too_low');
    }
  });

  it('POST /payment/receive takes a PAYMENT-SIGNATURE value: verified, settled by the built-in facilitator, once', async () => {
    const { buyer, header } = await svmPayment(seller.solana, await feePayerOf(seller.key));
    const check = await api(seller.key, 'POST', '/v1/payments/verify', {
      payment_proof: header,
      amount: 10000,
      asset: 'USDC',
      recipient: seller.solana,
    });
    assert.equal(check.status, 200);
    assert.equal(check.body.verified, true);
    const tooMuch = await api(seller.key, 'POST', '/v1/payments/verify', {
      payment_proof: header,
      amount: 10001,
      asset: 'USDC',
      recipient: seller.solana,
    });
    assert.deepEqual([tooMuch.body.verified, tooMuch.body.reason], [false, 'amount_too_low']);

    const body = { walletAddress: seller.solana, paymentProof: header, expectedAmount: 0.01, asset: 'USDC' };
    const received = await api(seller.key, 'POST', '/payment/receive', body);
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.equal(received.body.amountReceived, 0.01);
    assert.equal(received.body.sender, buyer);
    assert.equal(received.body.status, 'confirmed');
    assert.equal(received.body.network, chain.adapter.info.id);
    const onChain = await chain.adapter.getSignatureStatus(received.body.signature);
    assert.equal(onChain?.status === 'confirmed' || onChain?.status === 'finalized', true);

    // Settled by the facilitator: local mode knows it too (the same payload's settlement).
    const local = await api(seller.key, 'POST', '/transaction/receive', body);
    assert.equal(local.status, 422);
    assert.equal(local.body.error.details.paymentProof, 'already_used');
    const again = await api(seller.key, 'POST', '/payment/receive', body);
    assert.equal(again.status, 422);
    assert.equal(again.body.error.code, 'INVALID_PAYMENT_PROOF');
    assert.equal(again.body.error.details.paymentProof, 'already_used');
    const after = await api(seller.key, 'POST', '/v1/payments/verify', {
      payment_proof: header,
      amount: 10000,
      asset: 'USDC',
      recipient: seller.solana,
    });
    assert.deepEqual([after.body.verified, after.body.reason], [false, 'duplicate_settlement']);
  });

  /**
   * POST /payment/receive of an x402 payload with an Idempotency-Key whose first answer is never stored,
   * as when its instance is SIGKILLed between the settlement recording the payment and the answer being
   * written: the key keeps a claim with no answer, which lapses. The retry with the key is answered the
   * payment that request recorded; the payload presented with another key, or none, is still refused.
   */
  const receiveRetriedAfterLostAnswer = async (
    body: { walletAddress: string; paymentProof: string; expectedAmount: number; asset: string },
    key: string,
    expected: { amountReceived: number; sender: string },
  ) => {
    const asSeller = callerOf(gw);
    const receive = (headers: Record<string, string>) =>
      asSeller.post(seller.key, '/payment/receive', body, headers);
    const { idempotency } = gw.store;
    const complete = idempotency.complete;
    idempotency.complete = async () => {
      idempotency.complete = complete;
    };
    const first = await receive({ 'idempotency-key': key });
    assert.equal(first.statusCode, 200, first.body);
    const recorded = (
      await api(seller.key, 'GET', `/payment/history/${body.walletAddress}?limit=100`)
    ).body.payments.filter((p: { signature: string }) => p.signature === first.json().signature);
    assert.equal(recorded.length, 1, 'the first receive recorded the payment');
    assert.equal(recorded[0].paymentId, first.json().paymentId);

    // The client retries with its key until the claim of the lost request lapses (about 10 s).
    let retry = await receive({ 'idempotency-key': key });
    for (let tries = 0; retry.statusCode === 409 && tries < 60; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      retry = await receive({ 'idempotency-key': key });
    }
    assert.equal(retry.statusCode, 200, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(retry.json().paymentId, first.json().paymentId);
    assert.equal(retry.json().signature, first.json().signature);
    assert.equal(retry.json().amountReceived, expected.amountReceived);
    assert.equal(retry.json().sender, expected.sender);
    assert.equal(retry.json().status, 'confirmed');
    // That answer is the key's from now on; the payload presented again for a second purchase is refused.
    const again = await receive({ 'idempotency-key': key });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.json().paymentId, first.json().paymentId);
    for (const headers of [{ 'idempotency-key': `${key}-other` }, {}]) {
      const replayed = await receive(headers);
      assert.equal(replayed.statusCode, 422, replayed.body);
      assert.deepEqual(
        [replayed.json().error.code, replayed.json().error.details.paymentProof],
        ['INVALID_PAYMENT_PROOF', 'already_used'],
      );
    }
    const payments = (
      await api(seller.key, 'GET', `/payment/history/${body.walletAddress}?limit=100`)
    ).body.payments.filter((p: { signature: string }) => p.signature === first.json().signature);
    assert.equal(payments.length, 1, 'recorded once');
  };

  it('POST /payment/receive of an x402 payload (Solana) retried with its Idempotency-Key after the first answer was lost answers the payment it settled, not "already used"; another key or none is refused', {
    timeout: 60_000,
  }, async () => {
    const { buyer, header } = await svmPayment(seller.solana, await feePayerOf(seller.key));
    await receiveRetriedAfterLostAnswer(
      { walletAddress: seller.solana, paymentProof: header, expectedAmount: 0.01, asset: 'USDC' },
      'x402-receipt-solana-1',
      { amountReceived: 0.01, sender: buyer },
    );
  });

  it('POST /payment/receive of an x402 payload (EVM) retried with its Idempotency-Key after the first answer was lost answers the payment it settled, not "already used"; another key or none is refused', {
    timeout: 60_000,
  }, async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await api(seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const payload = await evmPayload(
      buyer,
      evmExactRequirements(evm, { amount: '20000', payTo: seller.evm }),
    );
    await receiveRetriedAfterLostAnswer(
      {
        walletAddress: seller.evm,
        paymentProof: encodePaymentSignatureHeader(payload),
        expectedAmount: 0.02,
        asset: 'USDC',
      },
      'x402-receipt-evm-1',
      { amountReceived: 0.02, sender: buyer.address },
    );
  });

  it('POST /payment/receive refuses an x402 payment for another wallet or below the expected amount', async () => {
    const other = await api(seller.key, 'POST', '/wallets', { chain: 'solana' });
    const { header } = await svmPayment(seller.solana, await feePayerOf(seller.key));
    const wrong = await api(seller.key, 'POST', '/payment/receive', {
      walletAddress: other.body.address,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    });
    assert.equal(wrong.status, 422);
    assert.deepEqual(
      [wrong.body.error.code, wrong.body.error.details.paymentProof],
      ['INVALID_PAYMENT_PROOF', 'recipient_mismatch'],
    );
    const low = await api(seller.key, 'POST', '/payment/receive', {
      walletAddress: seller.solana,
      paymentProof: header,
      expectedAmount: 0.02,
      asset: 'USDC',
    });
    assert.equal(low.status, 422);
    assert.deepEqual(
      [low.body.error.code, low.body.error.details.paymentProof],
      ['PAYMENT_VERIFICATION_FAILED', 'amount_too_low'],
    );
  });

  it('POST /payment/receive refuses an x402 v2 payment made for another resource; one for the resource asked, or asked for none, is accepted', async () => {
    // The stock client copies the 402's resource.url into the payload: https://shop.example/report here.
    const { header } = await svmPayment(seller.solana, await feePayerOf(seller.key));
    const body = { walletAddress: seller.solana, paymentProof: header, expectedAmount: 0.01, asset: 'USDC' };
    const other = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      resource: 'https://shop.example/premium',
    });
    assert.equal(other.status, 422);
    assert.deepEqual(
      [other.body.error.code, other.body.error.details.paymentProof],
      ['INVALID_PAYMENT_PROOF', 'resource_mismatch'],
    );

    const paid = await api(seller.key, 'POST', '/payment/receive', {
      ...body,
      resource: 'https://shop.example/report',
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const status = await api(seller.key, 'GET', `/payment/status/${paid.body.paymentId}`);
    assert.equal(status.body.resource, 'https://shop.example/report');

    // Asked for no resource, a payload for one is accepted (as a gate402 proof is).
    const second = await svmPayment(seller.solana, await feePayerOf(seller.key));
    const any = await api(seller.key, 'POST', '/payment/receive', { ...body, paymentProof: second.header });
    assert.equal(any.status, 200, JSON.stringify(any.body));
  });

  it('facilitatorUrl sends verification and settlement to another gate402 instance; a refusal there is PAYMENT_VERIFICATION_FAILED with its reason', async () => {
    // The seller's own gateway (its own storage) lets facilitatorUrl reach 127.0.0.1; the facilitator
    // is the first gateway, reached over HTTP with the seller's key there.
    const sellerGateway = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter, evm.adapter]),
      allowPrivateOutboundUrls: true,
    });
    try {
      const owner = await sellerGateway.newCaller('standard');
      const watched = await watchAddress(
        sellerGateway,
        owner.key,
        await custodialKeyOf(gw, seller.accountId, seller.solana),
      );
      assert.equal(watched.statusCode, 200, watched.body);
      const { buyer, header } = await svmPayment(seller.solana, await feePayerOf(seller.key));
      const receive = (facilitatorAuthorization: string) =>
        sellerGateway.app.inject({
          method: 'POST',
          url: '/payment/receive',
          headers: { authorization: `Bearer ${owner.key}` },
          payload: {
            walletAddress: seller.solana,
            paymentProof: header,
            expectedAmount: 0.01,
            asset: 'USDC',
            facilitatorUrl: `${gatewayUrl}/facilitator`,
            facilitatorAuthorization,
            timeout: 20,
          },
        });
      const unauthorised = await receive('Bearer g402_sk_not-a-key');
      assert.equal(unauthorised.statusCode, 422);
      assert.equal(unauthorised.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
      const res = await receive(`Bearer ${seller.key}`);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().sender, buyer);
      assert.equal(res.json().amountReceived, 0.01);
      const history = await sellerGateway.app.inject({
        method: 'GET',
        url: `/payment/history/${seller.solana}`,
        headers: { authorization: `Bearer ${owner.key}` },
      });
      assert.equal(history.json().payments[0].signature, res.json().signature);
      // The facilitator settled it, so the same payload through it again is refused with its reason.
      const again = await receive(`Bearer ${seller.key}`);
      assert.equal(again.statusCode, 422);
      assert.equal(again.json().error.details.paymentProof, 'already_used');
    } finally {
      await sellerGateway.close();
    }
  });

  it('facilitatorUrl: a settlement whose answer was lost, or that the facilitator now refuses as a duplicate, is found on chain and recorded once (Solana and EVM); the payload again is already_used', async () => {
    // The facilitator (the first gateway) settles, but its settle answer never reaches the seller's
    // gateway: the connection is dropped once it has answered.
    let settles = 0;
    const facilitator = await facilitatorInFront((path) => {
      if (path !== '/settle') return 'pass';
      settles++;
      return 'drop';
    });
    const { asOwner, receive, gateway } = await sellerGatewayWatching([
      { chain: 'solana', address: seller.solana },
      { chain: 'evm', address: seller.evm },
    ]);
    try {
      const evmBuyer = privateKeyToAccount(generatePrivateKey());
      await api(seller.key, 'POST', '/faucet', { address: evmBuyer.address, amount: 1, token: 'USDC' });
      const svm = await svmPayment(seller.solana, await feePayerOf(seller.key));
      const evmRequirements = evmExactRequirements(evm, { amount: '20000', payTo: seller.evm });
      const cases = [
        {
          walletAddress: seller.solana,
          paymentProof: svm.header,
          expectedAmount: 0.01,
          asset: 'USDC',
          buyer: svm.buyer,
        },
        {
          walletAddress: seller.evm,
          paymentProof: encodePaymentSignatureHeader(await evmPayload(evmBuyer, evmRequirements)),
          expectedAmount: 0.02,
          asset: 'USDC',
          buyer: evmBuyer.address,
        },
      ];
      for (const { buyer, ...body } of cases) {
        const settlesBefore = settles;
        const res = await receive(facilitator.url, body);
        assert.equal(settles, settlesBefore + 1, 'the facilitator settled once');
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual([res.json().amountReceived, res.json().sender], [body.expectedAmount, buyer]);
        // The transaction the facilitator broadcast, as the facilitator itself recorded it.
        const facilitatorSide = await api(seller.key, 'GET', `/payment/history/${body.walletAddress}`);
        assert.ok(
          facilitatorSide.body.payments.some(
            (p: { signature: string }) => p.signature === res.json().signature,
          ),
        );

        const again = await receive(facilitator.url, body);
        assert.equal(again.statusCode, 422, again.body);
        assert.equal(again.json().error.details.paymentProof, 'already_used');
        const history = await asOwner('GET', `/payment/history/${body.walletAddress}`);
        assert.deepEqual(
          history.json().payments.map((p: { signature: string }) => p.signature),
          [res.json().signature],
        );
      }

      // Settled by the facilitator before this gateway heard of it (an earlier answer lost, the chain not
      // confirming it yet when looked at): the facilitator now refuses it as a duplicate, the chain has it.
      const late = await svmPayment(seller.solana, await feePayerOf(seller.key));
      const payload = decodePaymentSignatureHeader(late.header);
      const direct = await api(seller.key, 'POST', '/facilitator/settle', {
        x402Version: 2,
        paymentPayload: payload,
        paymentRequirements: payload.accepted,
      });
      assert.equal(direct.body.success, true, JSON.stringify(direct.body));
      const recovered = await receive(facilitator.url, {
        walletAddress: seller.solana,
        paymentProof: late.header,
        expectedAmount: 0.01,
        asset: 'USDC',
      });
      assert.equal(recovered.statusCode, 200, recovered.body);
      assert.deepEqual(
        [recovered.json().signature, recovered.json().sender],
        [direct.body.transaction, late.buyer],
      );
    } finally {
      facilitator.close();
      await gateway.close();
    }
  });

  it('facilitatorUrl: an answer of a facilitator that could not be reached is not kept under the Idempotency-Key; the retry asks again and is paid', async () => {
    // Down for its first call, then up.
    let down = true;
    const facilitator = await facilitatorInFront(() => {
      if (!down) return 'pass';
      down = false;
      return 'fail';
    });
    const { receive, gateway } = await sellerGatewayWatching([{ chain: 'solana', address: seller.solana }]);
    try {
      const { header } = await svmPayment(seller.solana, await feePayerOf(seller.key));
      const once = () =>
        receive(
          facilitator.url,
          { walletAddress: seller.solana, paymentProof: header, expectedAmount: 0.01, asset: 'USDC' },
          { 'idempotency-key': 'facilitator-down-1' },
        );
      const first = await once();
      assert.equal(first.statusCode, 422, first.body);
      assert.equal(first.json().error.details.paymentProof, 'facilitator_error');
      const retried = await once();
      assert.equal(retried.statusCode, 200, retried.body);
      assert.equal(retried.headers['idempotent-replayed'], undefined);
      const again = await once();
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.json().paymentId, retried.json().paymentId);
    } finally {
      facilitator.close();
      await gateway.close();
    }
  });

  it('facilitatorUrl, EVM: an authorization whose nonce the buyer spent first on another authorization (to itself) is not taken for the payment', async () => {
    const { asOwner, receive, gateway } = await sellerGatewayWatching([
      { chain: 'evm', address: seller.evm },
    ]);
    try {
      const buyer = privateKeyToAccount(generatePrivateKey());
      await api(seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
      const payload = await evmPayload(
        buyer,
        evmExactRequirements(evm, { amount: '20000', payTo: seller.evm }),
      );
      // The same nonce signed again, for 1 atomic unit to the buyer itself, and used first: the nonce
      // is spent (AuthorizationUsed) though the seller was never paid.
      const submitter = privateKeyToAccount(generatePrivateKey());
      await api(seller.key, 'POST', '/faucet', { address: submitter.address, amount: 1 });
      const { authorization } = payload.payload as unknown as EvmPayload;
      await spendNonceOnAnotherAuthorization(evm, buyer, authorization, submitter);

      const res = await receive(`${gatewayUrl}/facilitator`, {
        walletAddress: seller.evm,
        paymentProof: encodePaymentSignatureHeader(payload),
        expectedAmount: 0.02,
        asset: 'USDC',
      });
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
      assert.equal((await asOwner('GET', `/payment/history/${seller.evm}`)).json().total, 0);
    } finally {
      await gateway.close();
    }
  });

  it('facilitatorUrl with a v1 X-PAYMENT value: the requirements forwarded name that facilitator’s fee payer (its GET /supported), not this gateway’s', async () => {
    // The seller's gateway runs its own facilitator, with a fee payer of its own (its own storage).
    const sellerGateway = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter, evm.adapter]),
      allowPrivateOutboundUrls: true,
    });
    try {
      await sellerGateway.services.facilitator.start();
      const owner = await sellerGateway.newCaller('premium');
      const external = await feePayerOf(seller.key);
      assert.notEqual(await feePayerOf(owner.key, sellerGateway), external);
      const asOwner = callerOf(sellerGateway);
      const watched = await watchAddress(
        sellerGateway,
        owner.key,
        await custodialKeyOf(gw, seller.accountId, seller.solana),
      );
      assert.equal(watched.statusCode, 200, watched.body);

      const buyerKey = await newV1SvmBuyer(chain);
      await api(seller.key, 'POST', '/faucet', { address: buyerKey.address, amount: 1, token: 'USDC' });
      // The buyer pays for the external facilitator's fee payer, as the seller's 402 told it to.
      const header = await buyerKey.paymentHeader({
        amount: '20000',
        payTo: seller.solana,
        feePayer: external,
        resource: 'https://shop.example/v1-remote',
      });
      const body = {
        walletAddress: seller.solana,
        paymentProof: header,
        expectedAmount: 0.02,
        asset: 'USDC',
        facilitatorUrl: `${gatewayUrl}/facilitator`,
        facilitatorAuthorization: `Bearer ${seller.key}`,
        timeout: 20,
      };
      const res = await asOwner.post(owner.key, '/payment/receive', body);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual([res.json().sender, res.json().amountReceived], [buyerKey.address, 0.02]);
      const onChain = await chain.adapter.getTransaction(res.json().signature);
      assert.equal(onChain?.feePayer, external, 'the external facilitator paid the fee');
    } finally {
      await sellerGateway.close();
    }
  });

  it('facilitatorUrl: a settle answer naming no transaction of the chain is refused, a payer that is no address is not recorded', async () => {
    // A facilitator answers any text; a NUL in it failed the payment's insert on PostgreSQL (500).
    let settleAnswer = {};
    const facilitator = createServer((req, res) => {
      req.resume();
      const answer = req.url?.endsWith('/verify') ? { isValid: true, payer: 'a\u0000b' } : settleAnswer;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
    await new Promise<void>((resolve) => facilitator.listen(0, '127.0.0.1', resolve));
    const sellerGateway = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter, evm.adapter]),
      allowPrivateOutboundUrls: true,
    });
    try {
      const owner = await sellerGateway.newCaller('standard');
      const asOwner = callerOf(sellerGateway);
      const wallet = (await asOwner.post(owner.key, '/wallets', { chain: 'evm' })).json().address as string;
      const receive = async (answer: object) => {
        settleAnswer = answer;
        const buyer = privateKeyToAccount(generatePrivateKey());
        const payload = await evmPayload(
          buyer,
          evmExactRequirements(evm, { amount: '20000', payTo: wallet }),
        );
        return asOwner.post(owner.key, '/payment/receive', {
          walletAddress: wallet,
          paymentProof: encodePaymentSignatureHeader(payload),
          expectedAmount: 0.02,
          asset: 'USDC',
          facilitatorUrl: `http://127.0.0.1:${(facilitator.address() as AddressInfo).port}`,
          timeout: 5,
        });
      };
      for (const transaction of ['0x\u0000', 'settled', `0x${'a'.repeat(63)}`]) {
        const refused = await receive({ success: true, transaction });
        assert.equal(refused.statusCode, 422, refused.body);
        assert.deepEqual(
          [refused.json().error.code, refused.json().error.details.paymentProof],
          ['PAYMENT_VERIFICATION_FAILED', 'facilitator_error'],
        );
      }
      const hash = `0x${'ab'.repeat(32)}`;
      const received = await receive({ success: true, transaction: hash, payer: 'p\u0000' });
      assert.equal(received.statusCode, 200, received.body);
      assert.deepEqual([received.json().signature, received.json().sender], [hash, '']);
      const history = await asOwner.get(owner.key, `/payment/history/${wallet}`);
      assert.equal(history.json().total, 1);
      // Its reason and message are repeated to the caller bounded, however long the answer.
      const long = await receive({
        success: false,
        errorReason: 'r'.repeat(20_000),
        errorMessage: 'm'.repeat(40_000),
      });
      assert.equal(long.statusCode, 422, long.body.slice(0, 300));
      const { details, message } = long.json().error;
      assert.equal(details.paymentProof, `${'r'.repeat(99)}…`);
      assert.ok(message.length <= 600, `a message of ${message.length} characters`);
      assert.ok(message.includes('m'.repeat(400)), message.slice(0, 120));
    } finally {
      await sellerGateway.close();
      facilitator.close();
    }
  });

  it('refuses a facilitatorUrl on a loopback, private or link-local address (SSRF) before any request', async () => {
    const { header } = await svmPayment(seller.solana, await feePayerOf(seller.key));
    for (const facilitatorUrl of [
      `${gatewayUrl}/facilitator`,
      'https://169.254.169.254/latest',
      'https://10.0.0.7/facilitator',
      'https://[::1]/f',
    ]) {
      const res = await api(seller.key, 'POST', '/payment/receive', {
        walletAddress: seller.solana,
        paymentProof: header,
        expectedAmount: 0.01,
        asset: 'USDC',
        facilitatorUrl,
      });
      assert.equal(res.status, 400, facilitatorUrl);
      assert.equal(res.body.error.code, 'INVALID_PARAMETERS');
      assert.ok(typeof res.body.error.details.facilitatorUrl === 'string', JSON.stringify(res.body));
    }
    // The payment was never settled: it is still good through the built-in facilitator.
    const ok = await api(seller.key, 'POST', '/payment/receive', {
      walletAddress: seller.solana,
      paymentProof: header,
      expectedAmount: 0.01,
      asset: 'USDC',
    });
    assert.equal(ok.status, 200);
  });

  it('v1: x402-fetch pays a v1 route (X-PAYMENT, solana-devnet) that settles through gate402 with x402Version 1', async () => {
    const buyerKey = await newV1SvmBuyer(chain);
    await api(seller.key, 'POST', '/faucet', { address: buyerKey.address, amount: 1, token: 'USDC' });
    const facilitator = gatewayFacilitator(gatewayUrl, seller.key);
    const requirements = {
      scheme: 'exact',
      network: 'solana-devnet',
      maxAmountRequired: '10000',
      resource: `${shopUrl}/v1-report`,
      description: 'a v1 report',
      mimeType: 'application/json',
      payTo: seller.solana,
      maxTimeoutSeconds: 60,
      asset: chain.localnet.usdcMint.address,
      extra: { feePayer: await feePayerOf(seller.key) },
    };
    shop?.app.get('/v1-report', async (req, res) => {
      const header = req.header('x-payment');
      if (header === undefined)
        return void res
          .status(402)
          .json({ x402Version: 1, error: 'X-PAYMENT header is required', accepts: [requirements] });
      const payload = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
      const verified = await facilitator.verify(payload, requirements as never);
      if (!verified.isValid)
        return void res
          .status(402)
          .json({ x402Version: 1, error: verified.invalidReason, accepts: [requirements] });
      const settled = await facilitator.settle(payload, requirements as never);
      if (!settled.success)
        return void res
          .status(402)
          .json({ x402Version: 1, error: settled.errorReason, accepts: [requirements] });
      res.setHeader('X-PAYMENT-RESPONSE', Buffer.from(JSON.stringify(settled)).toString('base64'));
      res.json({ report: 'v1' });
    });
    const pay = wrapV1FetchWithPayment(fetch, buyerKey.signer, 10_000n, undefined, {
      svmConfig: { rpcUrl: chain.localnet.rpcUrl },
    });
    const res = await pay(`${shopUrl}/v1-report`);
    assert.equal(res.status, 200, await res.clone().text());
    const settled = JSON.parse(
      Buffer.from(res.headers.get('x-payment-response') ?? '', 'base64').toString('utf8'),
    );
    assert.equal(settled.success, true);
    assert.equal(settled.network, 'solana-devnet');
    assert.equal(settled.payer, buyerKey.address);
    // v1 requirements carry the resource themselves: the seller's payment records it.
    const history = await api(seller.key, 'GET', `/payment/history/${seller.solana}`);
    const paid = history.body.payments.find(
      (p: { signature: string }) => p.signature === settled.transaction,
    );
    assert.equal(paid?.resource, `${shopUrl}/v1-report`);
  });

  it('POST /payment/receive takes a v1 X-PAYMENT value (x402 1.x client): settled once through the built-in facilitator', async () => {
    const buyerKey = await newV1SvmBuyer(chain);
    await api(seller.key, 'POST', '/faucet', { address: buyerKey.address, amount: 1, token: 'USDC' });
    const header = await buyerKey.paymentHeader({
      amount: '30000',
      payTo: seller.solana,
      feePayer: await feePayerOf(seller.key),
      resource: 'https://shop.example/v1',
    });
    const body = { walletAddress: seller.solana, paymentProof: header, expectedAmount: 0.03, asset: 'USDC' };
    const received = await api(seller.key, 'POST', '/payment/receive', body);
    assert.equal(received.status, 200, JSON.stringify(received.body));
    assert.deepEqual([received.body.amountReceived, received.body.sender], [0.03, buyerKey.address]);
    const again = await api(seller.key, 'POST', '/payment/receive', body);
    assert.equal(again.body.error.details.paymentProof, 'already_used');
  });
});
