import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import {
  type Address,
  bytesToHex,
  createPublicClient,
  createWalletClient,
  getAddress,
  type Hex,
  http,
  parseAbi,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../../src/chains/evm/permit2-addresses.ts';
import { permit2AuthorizationOf, permit2SettleCall } from '../../../src/chains/evm/permit2-payment.ts';
import { uptoPermitOf } from '../../../src/chains/evm/upto-evm-scheme.ts';
import { UPTO_PERMIT2_PROXY_ADDRESS, uptoSettleCall } from '../../../src/chains/evm/upto-permit2-proxy.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SPENT_WITHOUT_TRANSFER } from '../../../src/services/payments/x402/x402-pay.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address, address) view returns (uint256)',
]);
const PERMIT2_ABI = parseAbi([
  'function invalidateUnorderedNonces(uint256 wordPos, uint256 mask)',
  'function nonceBitmap(address, uint256) view returns (uint256)',
]);
const RESOURCE = 'https://shop.example/paid';
/** The exact price, 0.02 USDC, and the upto maximum, 0.05 USDC. */
const PRICE = 20_000n;
const MAX = 50_000n;

/**
 * Runtime code of a contract that calls `target` with the 4-byte `selector` followed by its own calldata
 * (reverting when the call does): the settle call is built at run time, so no transaction input carries
 * it — neither sent to the proxy nor verbatim inside a wrapper. How a seller's own "facilitator"
 * contract may look.
 */
function selectorForwarderCode(target: Address, selector: Hex): Hex {
  // PUSH4 selector, SHL 224, MSTORE at 0; CALLDATACOPY to 4; CALL(gas, target, 0, 0, 4 + size, 0, 0);
  // JUMPI to the JUMPDEST (0x34) before STOP on success, else REVERT.
  return `0x63${selector.slice(2)}60e01b5f52365f6004375f5f600436015f5f73${target.slice(2).toLowerCase()}5af16034575f5ffd5b00`;
}

/**
 * POST /payment/x402 paying through Permit2 (x402 `exact` with assetTransferMethod permit2, and `upto`)
 * from a custodial EVM wallet, when the settlement is not what the gateway recognises by its calldata,
 * on the embedded anvil, one database shared by two instances (PostgreSQL when DATABASE_URL is set, else
 * one SQLite file). Permit2 spends a permit's nonce only in the call that moves the tokens, so:
 * - a spent nonce is never expired as "nothing was paid" (the exact case was: findPaid's blind spot);
 * - the payment is confirmed on the transfer of the block where the nonce was spent, never on another
 *   permit's transfer of the same amount;
 * - a nonce spent with no transfer to be seen ends `finalized` at the signed amount (upto: its maximum)
 *   once that is final, with no transaction id and the reason, instead of staying pending forever;
 * - a process dying between the wallet's Permit2 approval and the payment leaves one approval, no payment.
 */
describe('POST /payment/x402 through Permit2: a spent nonce is the proof of payment', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let shared: Parameters<typeof startTestGateway>[0] & object;
  let offsetMs = 0;
  let usdc: Address;
  let network: string;
  let seller: { key: string; wallet: Address };
  const chainClient = () => createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const balance = (a: Address) =>
    chainClient().readContract({ address: usdc, abi: TOKEN_ABI, functionName: 'balanceOf', args: [a] });
  const operator = () =>
    createWalletClient({ account: evm.operator as Address, transport: http(evm.anvil.rpcUrl) });
  const anvil = (method: string, params: unknown[]) =>
    chainClient().request({ method: method as never, params: params as never });

  const newBuyer = async () => {
    const caller = await gw.newCaller('premium');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body
      .address as Address;
    for (const body of [
      { address: wallet, amount: 1, token: 'USDC' },
      { address: wallet, amount: 1 },
    ]) {
      const funded = await callAs(gw, seller.key, 'POST', '/faucet', body);
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    return { ...caller, wallet };
  };

  /** A v2 challenge with one option: exact through Permit2, or upto naming `facilitator`. */
  const challenge = (
    option: { scheme: 'exact' } | { scheme: 'upto'; facilitator: Address },
    maxTimeoutSeconds = 120,
  ) =>
    Buffer.from(
      JSON.stringify({
        x402Version: 2,
        resource: { url: RESOURCE, description: 'paid', mimeType: 'application/json' },
        accepts: [
          {
            scheme: option.scheme,
            network,
            asset: usdc,
            amount: (option.scheme === 'exact' ? PRICE : MAX).toString(),
            payTo: seller.wallet,
            maxTimeoutSeconds,
            extra: {
              name: 'USD Coin',
              version: '2',
              assetTransferMethod: 'permit2',
              ...(option.scheme === 'upto' ? { facilitatorAddress: option.facilitator } : {}),
            },
          },
        ],
      }),
    ).toString('base64');

  const pay = async (
    buyer: { key: string; wallet: Address },
    paymentRequired: string,
    via: TestGateway = gw,
  ) => {
    const paid = await callAs(via, buyer.key, 'POST', '/payment/x402', {
      walletAddress: buyer.wallet,
      paymentRequired,
      resource: RESOURCE,
      maxAmount: { USDC: 1 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.status, 'pending');
    return {
      paymentId: paid.body.paymentId as string,
      payload: decodePaymentSignatureHeader(paid.body.paymentHeader).payload as Record<string, unknown>,
    };
  };

  const check = async (key: string, paymentId: string) => {
    const checked = await callAs(gw, key, 'POST', `/payment/x402/${paymentId}/check`);
    assert.equal(checked.status, 200, JSON.stringify(checked.body));
    const record = await gw.store.payments.get(paymentId);
    assert.ok(record !== undefined);
    return record;
  };

  /** Deploys a selector-prepending forwarder to `target` at a fresh address. */
  const forwarder = async (target: Address, selector: Hex) => {
    const at = getAddress(bytesToHex(randomBytes(20)));
    await anvil('anvil_setCode', [at, selectorForwarderCode(target, selector)]);
    return at;
  };

  /** Sends `data` from anvil's operator to `to`; the receipt, which must succeed. */
  const send = async (to: Address, data: Hex) => {
    const hash = await operator().sendTransaction({ to, data, chain: null });
    const receipt = await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 });
    assert.equal(receipt.status, 'success');
    return receipt;
  };

  before(async () => {
    evm = await startTestEvm();
    network = evm.adapter.info.id;
    usdc = evm.usdc.address as Address;
    const storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    shared = {
      storage,
      masterKey: new Uint8Array(randomBytes(32)),
      networks: new NetworkRegistry([evm.adapter]),
    };
    gw = await startTestGateway({ ...shared, now: () => Date.now() + offsetMs });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('premium');
    seller = {
      key: caller.key,
      wallet: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
  });

  after(async () => {
    await gw?.close();
    await evm?.close();
    evm?.dispose();
  });

  it('exact through Permit2, settled by a seller contract building the call at run time, is confirmed at its own transfer, not expired nor taken for an earlier one of the same amount', async () => {
    offsetMs = 0;
    const buyer = await newBuyer();
    // An upto permit to the same seller, settled first for exactly the exact price: a transfer of the
    // same amount, owner to payee, in an earlier block, which is not the exact payment.
    const upto = await pay(buyer, challenge({ scheme: 'upto', facilitator: evm.operator as Address }));
    const uptoPermit = uptoPermitOf(upto.payload);
    assert.ok(uptoPermit !== undefined);
    const decoy = await send(UPTO_PERMIT2_PROXY_ADDRESS, uptoSettleCall(uptoPermit, PRICE).data);

    const exact = await pay(buyer, challenge({ scheme: 'exact' }));
    const permit = permit2AuthorizationOf(exact.payload);
    assert.ok(permit !== undefined && permit.spender === EXACT_PERMIT2_PROXY_ADDRESS);
    const call = permit2SettleCall(permit);
    const contract = await forwarder(EXACT_PERMIT2_PROXY_ADDRESS, call.data.slice(0, 10) as Hex);
    const before = await balance(seller.wallet);
    const settled = await send(contract, `0x${call.data.slice(10)}`);
    assert.equal((await balance(seller.wallet)) - before, PRICE, 'the seller took 0.02 USDC');

    // Looked at only once the permit is long past its deadline: it was expired as unpaid.
    offsetMs = 30 * 60_000;
    const record = await check(buyer.key, exact.paymentId);
    assert.deepEqual(
      [record.status, record.amount, record.signature, record.slot],
      ['confirmed', PRICE, settled.transactionHash, settled.blockNumber],
      `the chain moved ${PRICE} in ${settled.transactionHash} (the decoy: ${decoy.transactionHash})`,
    );
    const decoyRecord = await check(buyer.key, upto.paymentId);
    assert.deepEqual(
      [decoyRecord.status, decoyRecord.amount, decoyRecord.signature],
      ['confirmed', PRICE, decoy.transactionHash],
    );
  });

  it('upto settled by a seller contract building the call at run time for another amount than the maximum: confirmed at what moved', async () => {
    offsetMs = 0;
    const buyer = await newBuyer();
    // The seller's "facilitator" is its own contract; the upto proxy lets it settle (msg.sender is it).
    const placeholder = getAddress(bytesToHex(randomBytes(20)));
    const paid = await pay(buyer, challenge({ scheme: 'upto', facilitator: placeholder }));
    const permit = uptoPermitOf(paid.payload);
    assert.ok(permit !== undefined);
    const call = uptoSettleCall(permit, 12_345n);
    await anvil('anvil_setCode', [
      placeholder,
      selectorForwarderCode(UPTO_PERMIT2_PROXY_ADDRESS, call.data.slice(0, 10) as Hex),
    ]);
    const before = await balance(seller.wallet);
    const settled = await send(placeholder, `0x${call.data.slice(10)}`);
    assert.equal((await balance(seller.wallet)) - before, 12_345n);

    offsetMs = 30 * 60_000;
    const record = await check(buyer.key, paid.paymentId);
    assert.deepEqual(
      [record.status, record.amount, record.signature],
      ['confirmed', 12_345n, settled.transactionHash],
    );
  });

  it('a process dying between the Permit2 approval and the payment leaves one approval and no payment; the next payment sends none and pays', async () => {
    offsetMs = 0;
    const buyer = await newBuyer();
    const usdcBefore = await balance(buyer.wallet);
    // An instance whose process dies right after the approval is broadcast (mined at once on anvil),
    // before it learns the outcome and before it signs any permit.
    const dying = Object.create(evm.adapter, {
      getSignatureStatus: {
        value: async () => {
          throw new Error('the process died after broadcasting the approval');
        },
      },
    });
    const doomed = await startTestGateway({
      ...shared,
      networks: new NetworkRegistry([dying]),
      disposeStorage: false,
    });
    try {
      const died = await callAs(doomed, buyer.key, 'POST', '/payment/x402', {
        walletAddress: buyer.wallet,
        paymentRequired: challenge({ scheme: 'exact' }),
        resource: RESOURCE,
        maxAmount: { USDC: 1 },
      });
      assert.equal(died.status, 500, JSON.stringify(died.body));
    } finally {
      await doomed.close();
    }
    const client = chainClient();
    assert.equal(await client.getTransactionCount({ address: buyer.wallet }), 1, 'the approval was mined');
    const history = async () =>
      (await callAs(gw, buyer.key, 'GET', `/payment/history/${buyer.wallet}`)).body as {
        total: number;
        payments: { paymentId: string; amount: number; status: string; recipient: string }[];
      };
    const afterCrash = await history();
    assert.equal(afterCrash.total, 1, 'the approval only: no payment recorded, no permit handed out');
    assert.deepEqual(
      [afterCrash.payments[0]?.amount, afterCrash.payments[0]?.recipient, afterCrash.payments[0]?.status],
      [0, usdc, 'submitted'],
    );
    assert.equal(await balance(buyer.wallet), usdcBefore);

    // The reconciler confirms the approval from the chain; the next payment sends no second one.
    const reconciler = new PaymentReconciler({
      store: gw.store,
      networks: gw.networks,
      ledger: gw.services.ledger,
      wallets: gw.services.wallets,
      x402Purchases: gw.services.x402Pay,
      instanceId: 'test-reconciler',
      recheckMs: 0,
    });
    await reconciler.runOnce();
    const approvalId = afterCrash.payments[0]?.paymentId ?? '';
    assert.equal((await gw.store.payments.get(approvalId))?.status, 'confirmed');
    const shown = await callAs(gw, buyer.key, 'GET', `/payment/status/${approvalId}`);
    assert.deepEqual(
      [shown.body.status, shown.body.amount, typeof shown.body.metadata.description],
      ['confirmed', 0, 'string'],
    );
    assert.ok(shown.body.metadata.permit2Approval.fee > 0, 'its gas is shown as its fee');
    const paid = await pay(buyer, challenge({ scheme: 'exact' }));
    assert.equal(await client.getTransactionCount({ address: buyer.wallet }), 1, 'no second approval');
    const permit = permit2AuthorizationOf(paid.payload);
    assert.ok(permit !== undefined);
    await send(EXACT_PERMIT2_PROXY_ADDRESS, permit2SettleCall(permit).data);
    const record = await check(buyer.key, paid.paymentId);
    assert.deepEqual([record.status, record.amount], ['confirmed', PRICE]);
    assert.equal(await balance(buyer.wallet), usdcBefore - PRICE);
    assert.equal((await history()).total, 2);
  });

  // Last: it mines blocks past the permits' deadlines, moving the chain's clock ahead.
  it('a nonce spent with no transfer is never expired: pending until that is final, then finalized at the signed amount (upto: its maximum) without a transaction id; an unused permit expires once the chain finalizes past its deadline', async () => {
    offsetMs = 0;
    const buyer = await newBuyer();
    const usdcBefore = await balance(buyer.wallet);
    const validity = 2;
    const exact = await pay(buyer, challenge({ scheme: 'exact' }, validity));
    const upto = await pay(
      buyer,
      challenge({ scheme: 'upto', facilitator: evm.operator as Address }, validity),
    );
    const unused = await pay(buyer, challenge({ scheme: 'exact' }, validity));

    // The nonces are spent by a call that moves nothing (Permit2's invalidateUnorderedNonces, from the
    // wallet itself): no Transfer names them. The chain shows only that the permits can never be used.
    const signer = await gw.services.wallets.signer(buyer.accountId, buyer.wallet);
    const owner = createWalletClient({
      account: privateKeyToAccount(bytesToHex(signer.secretKey)),
      transport: http(evm.anvil.rpcUrl),
    });
    signer.secretKey.fill(0);
    const spentIn: bigint[] = [];
    for (const payload of [exact.payload, upto.payload]) {
      const nonce = BigInt((payload.permit2Authorization as { nonce: string }).nonce);
      const hash = await owner.writeContract({
        address: PERMIT2_ADDRESS,
        abi: PERMIT2_ABI,
        functionName: 'invalidateUnorderedNonces',
        args: [nonce >> 8n, 1n << (nonce & 0xffn)],
        chain: null,
      });
      const receipt = await chainClient().waitForTransactionReceipt({ hash, pollingInterval: 20 });
      assert.equal(receipt.status, 'success');
      spentIn.push(receipt.blockNumber);
    }

    // Before the deadline, and long after it by the gateway's clock while the chain has not finalized
    // past it: pending, the unused permit too (the chain may still take it).
    for (const offset of [0, 30 * 60_000]) {
      offsetMs = offset;
      for (const p of [exact, upto, unused]) {
        assert.equal((await check(buyer.key, p.paymentId)).status, 'pending', `offset ${offset} ms`);
      }
    }

    // The chain finalizes past the deadlines: 70 blocks 3 s apart (anvil's finalized block is 64 behind
    // the latest, so it is stamped some 18 s after now, past the 2 s the permits were signed for).
    // The unused permit was signed last: its deadline is the latest.
    const deadline = BigInt((unused.payload.permit2Authorization as { deadline: string }).deadline);
    await anvil('anvil_mine', ['0x46', '0x3']);
    const finalized = await chainClient().getBlock({ blockTag: 'finalized' });
    assert.ok(finalized.timestamp > deadline, `finalized at ${finalized.timestamp}, deadline ${deadline}`);
    assert.equal((await check(buyer.key, unused.paymentId)).status, 'expired', 'an unused permit expires');

    for (const [p, amount, block] of [
      [exact, PRICE, spentIn[0]],
      [upto, MAX, spentIn[1]],
    ] as const) {
      const record = await check(buyer.key, p.paymentId);
      assert.deepEqual(
        [record.status, record.amount, record.signature, record.slot, record.error],
        ['finalized', amount, null, block, SPENT_WITHOUT_TRANSFER],
      );
      const status = await callAs(gw, buyer.key, 'GET', `/payment/status/${p.paymentId}`);
      assert.deepEqual(
        [status.body.status, status.body.signature, status.body.blockHeight],
        ['finalized', null, Number(block)],
      );
    }
    // Nothing moved in fact (the wallet spent the nonces itself): the record is the upper bound.
    assert.equal(await balance(buyer.wallet), usdcBefore);
  });
});
