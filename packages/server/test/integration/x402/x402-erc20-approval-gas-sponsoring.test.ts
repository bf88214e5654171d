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
import { declareErc20ApprovalGasSponsoringExtension } from '@x402/extensions';
import { wrapFetchWithPayment } from '@x402/fetch';
import {
  x402ResourceServer as HonoResourceServer,
  paymentMiddleware as honoPaymentMiddleware,
} from '@x402/hono';
import { Hono } from 'hono';
import {
  type Address,
  createPublicClient,
  encodeFunctionData,
  type Hex,
  http,
  maxUint256,
  parseAbi,
} from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { anvilEndpoints } from '../../../src/chains/evm/embedded-evm.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { feeDayOf } from '../../../src/domain/sponsored-fees.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { newWatchedEvmWallet } from '../../support/watched-evm-wallet.ts';
import { recordingFetch } from '../../support/x402-buyer.ts';
import { gatewayFacilitator, startShop, type TestShop } from '../../support/x402-shop.ts';

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function approve(address spender, uint256 amount) returns (bool)',
]);

type ApprovalInfo = {
  from: string;
  asset: string;
  spender: string;
  amount: string;
  signedTransaction: Hex;
  version: string;
};

/** PostgreSQL when DATABASE_URL is set, a SQLite file otherwise; the test gateway disposes of it when closed. */
const storage = (): Promise<TempStorage> =>
  DATABASE_URL === undefined ? Promise.resolve(tempSqlite()) : tempPostgres();

/**
 * x402's `erc20ApprovalGasSponsoring` through gate402's facilitator: a stock `@x402/express` or
 * `@x402/hono` seller asking for `exact` with Permit2 and declaring the extension, and a stock
 * `@x402/fetch` + `@x402/evm` buyer holding the token but no Permit2 allowance and no ETH. The buyer
 * signs its own `approve(Permit2, max)` transaction; the facilitator funds exactly the gas it lacks for
 * it, broadcasts it, then settles the Permit2 permit through x402's proxy.
 */
describe('x402 exact Permit2 with erc20ApprovalGasSponsoring', () => {
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
  const tokenBalance = (address: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [address] });
  const allowance = (owner: Address) =>
    chainClient().readContract({
      address: usdc,
      abi: TOKEN_ABI,
      functionName: 'allowance',
      args: [owner, PERMIT2_ADDRESS],
    });
  const eth = (address: Address) => chainClient().getBalance({ address });

  /** A buyer with 1 USDC, no ETH and no allowance to Permit2. */
  const newBuyer = async (): Promise<PrivateKeyAccount> => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await api(seller.key, 'POST', '/faucet', {
      address: buyer.address,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
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
  /** What the stock buyer sends when the seller declares erc20ApprovalGasSponsoring. */
  const stockPayload = (buyer: PrivateKeyAccount, requirements = requirementsFor()) =>
    x402Client
      .fromConfig({ schemes: [{ network, client: buyerScheme(buyer) }], spendControls: false })
      .createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://shop.example/r' },
        accepts: [requirements],
        extensions: declareErc20ApprovalGasSponsoringExtension(),
      });
  const infoOf = (payload: PaymentPayload) => {
    const extension = payload.extensions?.erc20ApprovalGasSponsoring as { info: ApprovalInfo } | undefined;
    assert.ok(extension !== undefined, 'the stock buyer signed an approval transaction');
    return extension.info;
  };
  const withInfo = (payload: PaymentPayload, info: Partial<ApprovalInfo>): PaymentPayload => ({
    ...payload,
    extensions: { erc20ApprovalGasSponsoring: { info: { ...infoOf(payload), ...info } } },
  });
  /** An approval transaction as a wallet would sign it, the stock client's fields unless changed. */
  const signApproval = async (
    signer: PrivateKeyAccount,
    changes: {
      to?: Address;
      spender?: Address;
      amount?: bigint;
      chainId?: number;
      nonce?: number;
      gas?: bigint;
      maxFeePerGas?: bigint;
      data?: Hex;
    } = {},
  ) => {
    const fees = await chainClient().estimateFeesPerGas();
    return signer.signTransaction({
      type: 'eip1559',
      chainId: changes.chainId ?? chainId,
      to: changes.to ?? usdc,
      data:
        changes.data ??
        encodeFunctionData({
          abi: TOKEN_ABI,
          functionName: 'approve',
          args: [changes.spender ?? PERMIT2_ADDRESS, changes.amount ?? maxUint256],
        }),
      nonce: changes.nonce ?? 0,
      gas: changes.gas ?? 70_000n,
      maxFeePerGas: changes.maxFeePerGas ?? fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
  };
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
  const spentFees = () => gw.store.sponsoredFees.spent(seller.accountId, network, feeDayOf(Date.now()));
  const feePayer = () => gw.services.facilitator.schemeFor(network)?.signers()[0] as Address;

  /**
   * What the approval step cost, from the chain: the funding transfer the fee payer sent the buyer (the
   * only transaction into the buyer's account), and the buyer's approval's fee.
   */
  const stepOnChain = async (buyer: Address) => {
    const client = chainClient();
    const latest = await client.getBlockNumber();
    const found: { funded: bigint; fundingFee: bigint; approvalFee: bigint; fundings: number } = {
      funded: 0n,
      fundingFee: 0n,
      approvalFee: 0n,
      fundings: 0,
    };
    for (let n = latest; n >= 0n && n > latest - 40n; n--) {
      const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
      for (const tx of block.transactions) {
        const receipt = await client.getTransactionReceipt({ hash: tx.hash });
        const fee = receipt.gasUsed * receipt.effectiveGasPrice;
        if (tx.to?.toLowerCase() === buyer.toLowerCase()) {
          found.fundings += 1;
          found.funded += tx.value;
          found.fundingFee += fee;
        }
        if (tx.from.toLowerCase() === buyer.toLowerCase()) found.approvalFee += fee;
      }
    }
    return found;
  };

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id as `eip155:${string}`;
    usdc = evm.usdc.address as Address;
    chainId = Number(network.slice('eip155:'.length));
    gw = await startTestGateway({ networks: new NetworkRegistry([evm.adapter]), storage: await storage() });
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
          extensions: declareErc20ApprovalGasSponsoringExtension(),
          description: 'a report paid through Permit2 by a buyer who never approved it and holds no ETH',
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
        { 'GET /hono-sponsored': { accepts, extensions: declareErc20ApprovalGasSponsoringExtension() } },
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

  it('GET /facilitator/supported lists erc20ApprovalGasSponsoring beside eip2612GasSponsoring', async () => {
    const { status, body } = await api(seller.key, 'GET', '/facilitator/supported');
    assert.equal(status, 200);
    assert.ok(body.extensions.includes('erc20ApprovalGasSponsoring'), JSON.stringify(body.extensions));
    assert.ok(body.extensions.includes('eip2612GasSponsoring'));
  });

  for (const [seller_, url] of [
    ['@x402/express', () => expressUrl],
    ['@x402/hono', () => honoUrl],
  ] as const) {
    it(`a stock ${seller_} seller is paid exactly by a stock @x402/fetch buyer with no allowance and no ETH: its approval funded to the wei and broadcast first, charged to the fee budget, once`, async () => {
      const buyer = await newBuyer();
      const client = x402Client.fromConfig({
        schemes: [{ network, client: buyerScheme(buyer) }],
        spendControls: { allowedAssets: [{ network, asset: usdc }] },
      });
      const { fetch: recording, sent } = recordingFetch();
      const sellerBefore = await tokenBalance(seller.evm);
      const feesBefore = await spentFees();
      const feePayerBefore = await eth(feePayer());

      const res = await wrapFetchWithPayment(recording, client)(url());
      assert.equal(res.status, 200, await res.clone().text());
      const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
      assert.deepEqual([settled.success, settled.payer], [true, buyer.address]);
      const payload = decodePaymentSignatureHeader(sent[0] ?? '');
      const info = infoOf(payload);
      assert.deepEqual(
        [info.from, info.spender, info.amount],
        [buyer.address, PERMIT2_ADDRESS, maxUint256.toString()],
      );

      // The seller is paid exactly; the settlement is the proxy's settle, after the approval.
      assert.equal(await tokenBalance(seller.evm), sellerBefore + 20000n);
      assert.equal(await tokenBalance(buyer.address), 1_000_000n - 20000n);
      const tx = await chainClient().getTransaction({ hash: settled.transaction as Hex });
      assert.equal(tx.to?.toLowerCase(), EXACT_PERMIT2_PROXY_ADDRESS.toLowerCase());
      assert.ok((await allowance(buyer.address)) >= maxUint256 - 20000n);

      // One funding, of exactly what the approval could cost (its gas limit at its max fee): the buyer
      // spent only the approval's fee out of it, nothing else.
      const step = await stepOnChain(buyer.address);
      assert.equal(step.fundings, 1);
      const approvalHash = await findApprovalHash(buyer.address);
      assert.ok(approvalHash !== undefined);
      const approvalTx = await chainClient().getTransaction({ hash: approvalHash });
      assert.equal(step.funded, approvalTx.gas * (approvalTx.maxFeePerGas ?? 0n));
      assert.equal(await eth(buyer.address), step.funded - step.approvalFee);
      assert.ok(step.approvalFee > 0n);
      // The fee budget shows the funding, its transfer's fee and the settlement's fee; the fee payer spent that.
      const receipt = await chainClient().getTransactionReceipt({ hash: settled.transaction as Hex });
      const settleFee = receipt.gasUsed * receipt.effectiveGasPrice;
      assert.equal((await spentFees()) - feesBefore, step.funded + step.fundingFee + settleFee);
      assert.equal(feePayerBefore - (await eth(feePayer())), step.funded + step.fundingFee + settleFee);

      // The same payload again: never sent, never funded twice.
      const again = await facilitator('settle', payload, payload.accepted);
      assert.deepEqual(
        [again.success, again.errorReason, again.transaction],
        [false, 'duplicate_settlement', settled.transaction],
      );
      assert.equal((await stepOnChain(buyer.address)).fundings, 1);
      assert.equal(await tokenBalance(buyer.address), 1_000_000n - 20000n);
    });
  }

  /** The hash of the buyer's one transaction (its approval), found in recent blocks. */
  const findApprovalHash = async (buyer: Address): Promise<Hex | undefined> => {
    const client = chainClient();
    const latest = await client.getBlockNumber();
    for (let n = latest; n >= 0n && n > latest - 40n; n--) {
      const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
      const tx = block.transactions.find((t) => t.from.toLowerCase() === buyer.toLowerCase());
      if (tx !== undefined) return tx.hash;
    }
    return undefined;
  };

  it('refuses, before spending anything, an approval of another spender, another token, another chain, a stale or future nonce, another signer, a huge gas limit or fee, or extra calldata', async () => {
    const buyer = await newBuyer();
    const requirements = requirementsFor();
    const payload = await stockPayload(buyer, requirements);
    const other = privateKeyToAccount(generatePrivateKey());
    const feePayerBefore = await eth(feePayer());
    const feesBefore = await spentFees();
    const verify = async (p: PaymentPayload) => (await facilitator('verify', p, requirements)).invalidReason;
    const settle = async (p: PaymentPayload) => {
      const body = await facilitator('settle', p, requirements);
      assert.equal(body.success, false, JSON.stringify(body));
      return body.errorReason;
    };
    assert.equal(await verify(payload), undefined, 'the untouched payment is valid');
    const signed = async (changes: Parameters<typeof signApproval>[1], signer = buyer) =>
      withInfo(payload, { signedTransaction: await signApproval(signer, changes) });
    const cases: [string, PaymentPayload, string][] = [
      ['another spender', await signed({ spender: other.address }), 'erc20_approval_tx_wrong_spender'],
      ['another token', await signed({ to: EXACT_PERMIT2_PROXY_ADDRESS }), 'erc20_approval_tx_wrong_target'],
      ['another chain', await signed({ chainId: chainId + 1 }), 'erc20_approval_tx_invalid_signature'],
      ['a nonce ahead', await signed({ nonce: 1 }), 'erc20_approval_tx_nonce_mismatch'],
      ['another signer', await signed({}, other), 'erc20_approval_tx_signer_mismatch'],
      ['a huge gas limit', await signed({ gas: 5_000_000n }), 'erc20_approval_tx_gas_too_high'],
      ['a huge fee', await signed({ maxFeePerGas: 10n ** 15n }), 'erc20_approval_tx_fee_too_high'],
      [
        'one unit less than the permit',
        await signed({ amount: 19_999n }),
        'erc20_approval_tx_invalid_calldata',
      ],
      [
        'calldata with more appended',
        await signed({
          data: `${encodeFunctionData({ abi: TOKEN_ABI, functionName: 'approve', args: [PERMIT2_ADDRESS, maxUint256] })}00`,
        }),
        'erc20_approval_tx_invalid_calldata',
      ],
      [
        'another info.spender',
        withInfo(payload, { spender: other.address }),
        'erc20_approval_spender_not_permit2',
      ],
      ['another info.from', withInfo(payload, { from: other.address }), 'erc20_approval_from_mismatch'],
      ['garbage', withInfo(payload, { signedTransaction: '0x1234' }), 'erc20_approval_tx_parse_failed'],
      ['malformed', withInfo(payload, { amount: 'all' }), 'invalid_erc20_approval_extension_format'],
    ];
    for (const [what, p, reason] of cases) {
      assert.equal(await verify(p), reason, what);
      assert.equal(await settle(p), reason, what);
    }
    // A stale nonce: the buyer's nonce moved past the approval (it sent a transaction of its own).
    const gas = await api(seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1 });
    assert.equal(gas.status, 200);
    const { sendTransaction } = await import('viem/actions');
    const { createWalletClient } = await import('viem');
    await chainClient().waitForTransactionReceipt({
      hash: await sendTransaction(createWalletClient({ account: buyer, transport: http(evm.anvil.rpcUrl) }), {
        chain: null,
        to: other.address,
        value: 1n,
      }),
      pollingInterval: 20,
    });
    assert.equal(await verify(payload), 'erc20_approval_tx_nonce_mismatch', 'a stale nonce');
    assert.equal(await settle(payload), 'erc20_approval_tx_nonce_mismatch', 'a stale nonce');
    // Nothing was funded, broadcast, approved or charged.
    assert.equal(await eth(feePayer()), feePayerBefore);
    assert.equal(await spentFees(), feesBefore);
    assert.equal(await allowance(buyer.address), 0n);
    assert.equal(await tokenBalance(buyer.address), 1_000_000n);
  });

  it('the same payload settled twice at once, and a second payment carrying the same approval: one funding, each payment once', async () => {
    const buyer = await newBuyer();
    const requirements = requirementsFor();
    const payload = await stockPayload(buyer, requirements);
    const answers = await Promise.all([
      facilitator('settle', payload, requirements),
      facilitator('settle', payload, requirements),
      facilitator('settle', payload, requirements),
    ]);
    assert.equal(answers.filter((a) => a.success === true).length, 1, JSON.stringify(answers));
    for (const a of answers.filter((x) => x.success !== true))
      assert.ok(['duplicate_settlement', 'settlement_pending'].includes(a.errorReason), JSON.stringify(a));
    // Another payment (its own Permit2 nonce) carrying the first one's approval, at once with a third:
    // the allowance is there now, so neither is funded again.
    const second = await stockPayload(buyer, requirements);
    const replay: PaymentPayload = { ...second, extensions: { ...payload.extensions } };
    assert.ok((await allowance(buyer.address)) >= 20000n, 'the approval landed');
    const settledSecond = await facilitator('settle', replay, requirements);
    assert.equal(settledSecond.success, true, JSON.stringify(settledSecond));
    assert.equal(await tokenBalance(buyer.address), 1_000_000n - 40000n);
    const step = await stepOnChain(buyer.address);
    assert.equal(step.fundings, 1);
    assert.equal(await eth(buyer.address), step.funded - step.approvalFee);
  });

  it('two payments carrying one unsent approval at once: only one is funded, the other is refused erc20_approval_in_use or settles on its allowance', async () => {
    const buyer = await newBuyer();
    const requirements = requirementsFor();
    const first = await stockPayload(buyer, requirements);
    const second = await stockPayload(buyer, requirements);
    const replay: PaymentPayload = { ...second, extensions: { ...first.extensions } };
    const [a, b] = await Promise.all([
      facilitator('settle', first, requirements),
      facilitator('settle', replay, requirements),
    ]);
    const reasons = [a, b].map((x) => (x.success === true ? 'success' : x.errorReason)).sort();
    assert.ok(
      JSON.stringify(reasons) === '["erc20_approval_in_use","success"]' ||
        JSON.stringify(reasons) === '["success","success"]',
      JSON.stringify([a, b]),
    );
    assert.equal((await stepOnChain(buyer.address)).fundings, 1);
  });

  it('local mode: the seller wallet broadcasts no approval, so POST /transaction/receive refuses such a payment without an allowance, sending nothing', async () => {
    const caller = await gw.newCaller('standard');
    const wallet = await newWatchedEvmWallet(gw, evm, caller.key);
    const buyer = await newBuyer();
    const payload = await stockPayload(buyer, requirementsFor({ payTo: wallet.address }));
    const built = await callAs(gw, caller.key, 'POST', '/transaction/receive', {
      walletAddress: wallet.address,
      paymentProof: encodePaymentSignatureHeader(payload),
      expectedAmount: 0.02,
      asset: 'USDC',
    });
    assert.equal(built.status, 422, JSON.stringify(built.body));
    assert.match(JSON.stringify(built.body), /erc20ApprovalGasSponsoring|permit2_allowance_required/);
    assert.equal(await chainClient().getTransactionCount({ address: buyer.address }), 0);
    assert.equal(await eth(buyer.address), 0n);
  });

  for (const crash of [
    'between the funding and the approval',
    'between the approval and the settlement',
  ] as const) {
    it(`a crash ${crash}: the finisher goes on from there and settles once, never funding twice`, async () => {
      const patient = await startTestGateway({
        networks: new NetworkRegistry([evm.adapter]),
        confirmTimeoutMs: 400,
        storage: await storage(),
      });
      const anvil = createAnvilClient(anvilEndpoints(evm.anvil.rpcUrl, undefined));
      try {
        await patient.services.facilitator.start();
        const buyer = await newBuyer();
        const requirements = requirementsFor();
        const payload = await stockPayload(buyer, requirements);
        const { accountId } = await patient.newCaller('premium');
        await anvil.setAutomine(false);
        // The funding is sent and not mined: the settle answers pending, the approval unsent.
        const pending = await patient.services.facilitator.settle(payload, requirements, accountId);
        assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
        const key = patient.services.facilitator.identityOf({
          x402Version: 2,
          scheme: 'exact',
          networkAsSent: network,
          network,
          payload: { ...payload.payload, extensions: payload.extensions },
          requirements: { ...requirements, amount: 20000n },
        });
        const row = await patient.store.settlements.get(key ?? '');
        assert.ok(row?.sponsoredApproval != null, 'the step is stored with the claim');
        assert.equal(row.status, 'claimed');
        assert.ok(row.sponsoredApproval.fundingTransactionId !== null);
        await anvil.mine({ blocks: 1 });
        assert.equal(
          await chainClient().getTransactionCount({ address: buyer.address }),
          0,
          'approval not sent',
        );
        if (crash === 'between the approval and the settlement') {
          // The approval is sent (a retry of the settle) and mined; the settlement is not sent.
          const again = await patient.services.facilitator.settle(payload, requirements, accountId);
          assert.equal(again.errorReason, 'settlement_pending');
          await anvil.mine({ blocks: 1 });
          assert.equal(
            await chainClient().getTransactionCount({ address: buyer.address }),
            1,
            'approval mined',
          );
          const settleTx = await chainClient()
            .getTransactionReceipt({ hash: row.transactionId as Hex })
            .catch(() => undefined);
          assert.equal(settleTx, undefined, 'the settlement is not sent yet');
        }
        await anvil.setAutomine(true);
        // The process died here: the finisher picks the row up as it is stored.
        const stored = await patient.store.settlements.get(row.key);
        assert.ok(stored !== undefined);
        let status = await patient.services.facilitator.finish(stored, 2_000);
        for (let i = 0; i < 10 && status === 'open'; i++) {
          const now = await patient.store.settlements.get(row.key);
          status = now === undefined ? 'open' : await patient.services.facilitator.finish(now, 2_000);
        }
        assert.equal(status, 'settled');
        // Finishing again, or settling again, sends and funds nothing more.
        const done = await patient.store.settlements.get(row.key);
        assert.ok(done !== undefined);
        assert.equal(await patient.services.facilitator.finish(done, 500), 'settled');
        const dup = await patient.services.facilitator.settle(payload, requirements, accountId);
        assert.deepEqual([dup.success, dup.errorReason], [false, 'duplicate_settlement']);
        assert.equal(await tokenBalance(buyer.address), 1_000_000n - 20000n);
        const step = await stepOnChain(buyer.address);
        assert.equal(step.fundings, 1);
        assert.equal(step.funded, row.sponsoredApproval.funded);
        assert.equal(await eth(buyer.address), step.funded - step.approvalFee);
        // The budget holds the final cost: funding, its fee and the settlement's fee.
        const receipt = await chainClient().getTransactionReceipt({ hash: row.transactionId as Hex });
        assert.equal(
          done.sponsoredFee?.amount,
          step.funded + step.fundingFee + receipt.gasUsed * receipt.effectiveGasPrice,
        );
      } finally {
        await anvil.setAutomine(true);
        await patient.close();
      }
    });
  }
});
