import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bytesToHex, getAddress, type Hex, parseTransaction, serializeTransaction } from 'viem';
import { decodeTransferNote } from '../src/chains/evm/transfer-calldata.ts';
import { PaymentReconciler } from '../src/workers/payment-reconciler.ts';
import { type EvmLocalWallet, newEvmLocalWallet, signAndBroadcastEvm } from './support/evm-local-signer.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from './support/evm-payment-fixture.ts';

const PAYMENT_ID = /^pay_[0-9A-HJKMNP-TV-Z]{26}$/;
const NETWORK = 'eip155:31337';

/**
 * Local transaction mode on anvil: the caller's wallet is one the gateway never holds a key for. The
 * test signs the unsigned EIP-1559 transaction with viem and broadcasts it to anvil itself, as a caller
 * with its own RPC endpoint would; the reconciler finds it by its reference.
 */
describe('local transaction mode on EVM (anvil): /transaction/send, /transaction/receive, verification', () => {
  let f: EvmPaymentFixture;
  let buyer: { accountId: string; key: string };
  let payer: EvmLocalWallet;
  let seller: EvmParty;
  let reconciler: PaymentReconciler;

  before(async () => {
    f = await startEvmPaymentFixture();
    buyer = await f.gw.newCaller();
    payer = newEvmLocalWallet();
    await f.chain.faucet?.fundNative(payer.address, 20n * ETH);
    seller = await f.party();
    reconciler = f.reconciler('evm-local-worker');
  });
  after(() => f.close());

  const build = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    f.gw.app.inject({
      method: 'POST',
      url: '/transaction/send',
      headers: { authorization: `Bearer ${buyer.key}`, ...headers },
      payload: { walletAddress: payer.address, ...body },
    });
  const status = async (key: string, paymentId: string) =>
    (await f.get(key, `/payment/status/${paymentId}`)).json();
  const broadcast = (transaction: string, privateKey = payer.privateKey) =>
    signAndBroadcastEvm(f.evm.anvil.rpcUrl, transaction, privateKey);

  it('builds an unsigned EIP-1559 transaction; signed with viem and broadcast by the caller, it confirms', async () => {
    const before = Date.now();
    const height = await f.chain.getBlockHeight();
    const nonce = await f.anvil.getTransactionCount({ address: payer.address as Hex, blockTag: 'pending' });
    // Asked in lower case: stored, proven and matched on chain in checksum case.
    const res = await build({
      walletAddress: payer.address.toLowerCase(),
      recipientAddress: seller.wallet.toLowerCase(),
      amount: 0.25,
      resource: 'https://api.example.com/report',
      metadata: { referenceId: 'order-9' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const b = res.json();
    assert.match(b.paymentId, PAYMENT_ID);
    assert.equal(b.status, 'pending');
    assert.equal(b.amount, 0.25);
    assert.equal(b.recipient, seller.wallet);
    assert.equal(b.network, NETWORK);
    assert.equal(b.lastValidBlockHeight, Number(height) + 150);
    assert.ok(b.expiresAt >= before + 60_000 && b.expiresAt <= Date.now() + 60_000, String(b.expiresAt));
    assert.match(b.reference, /^0x[0-9a-fA-F]{40}$/);

    const tx = parseTransaction(bytesToHex(Buffer.from(b.transaction, 'base64')));
    assert.equal(tx.type, 'eip1559');
    assert.equal(tx.chainId, 31337);
    assert.equal(tx.to && getAddress(tx.to), seller.wallet);
    assert.equal(tx.value, ETH / 4n, 'exactly 0.25 ETH in wei');
    assert.equal(tx.nonce, nonce, "the sender's next nonce");
    assert.equal(tx.r, undefined, 'unsigned');
    assert.ok((tx.maxFeePerGas ?? 0n) >= (tx.maxPriorityFeePerGas ?? 0n));
    assert.deepEqual(decodeTransferNote(tx.data ?? '0x'), { reference: b.reference, memo: b.paymentId });

    const check = f.gw.services.proofs.check(b.paymentProof);
    assert.ok(check.valid);
    const { kid: _kid, iat: _iat, ...claims } = check.claims;
    assert.deepEqual(claims, {
      v: 1,
      pid: b.paymentId,
      net: NETWORK,
      ref: b.reference,
      from: payer.address,
      to: seller.wallet,
      amt: '250000000000000000',
      res: 'https://api.example.com/report',
    });

    await reconciler.runOnce();
    const pending = await status(buyer.key, b.paymentId);
    assert.equal(pending.status, 'pending');
    assert.equal(pending.signature, null);

    const sellerBefore = await f.chain.getBalance(seller.wallet);
    const hash = await broadcast(b.transaction);
    await reconciler.runOnce();
    const receipt = await f.anvil.getTransactionReceipt({ hash });
    const confirmed = await status(buyer.key, b.paymentId);
    assert.deepEqual(
      { ...confirmed, timestamp: 0 },
      {
        paymentId: b.paymentId,
        type: 'sent',
        network: NETWORK,
        signature: hash,
        status: 'confirmed',
        amount: 0.25,
        sender: payer.address,
        recipient: seller.wallet,
        resource: 'https://api.example.com/report',
        blockHeight: Number(receipt.blockNumber),
        confirmations: 1,
        timestamp: 0,
        metadata: { referenceId: 'order-9' },
      },
    );
    assert.equal(await f.chain.getBalance(seller.wallet), sellerBefore + ETH / 4n);

    // History finds it under the payer's address in any case, like the payment's own wallet.
    const history = (await f.get(buyer.key, `/payment/history/${payer.address.toLowerCase()}`)).json();
    assert.equal(history.total, 1);
    assert.deepEqual(history.payments[0], {
      paymentId: b.paymentId,
      type: 'sent',
      amount: 0.25,
      recipient: seller.wallet,
      resource: 'https://api.example.com/report',
      status: 'confirmed',
      timestamp: history.payments[0].timestamp,
      signature: hash,
      network: NETWORK,
    });

    // anvil calls a block finalized 64 blocks deep.
    await f.anvil.mine({ blocks: 64 });
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'finalized');
    const events = (await f.gw.store.events.listAfter(buyer.accountId, 0, 100))
      .filter((e) => e.paymentId === b.paymentId)
      .map((e) => e.type);
    assert.deepEqual(events, ['payment.confirmed', 'payment.finalized']);
  });

  it('finds the transaction when the caller re-signs it with another nonce and fees', async () => {
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.001 })).json();
    const tx = parseTransaction(bytesToHex(Buffer.from(b.transaction, 'base64')));
    assert.equal(tx.type, 'eip1559');
    // Another transaction of the caller's took the nonce first: the caller signs the next one instead.
    await broadcast((await build({ recipientAddress: seller.wallet, amount: 0.002 })).json().transaction);
    const moved = serializeTransaction({
      ...tx,
      nonce: (tx.nonce ?? 0) + 1,
      maxPriorityFeePerGas: (tx.maxPriorityFeePerGas ?? 0n) + 1n,
      maxFeePerGas: (tx.maxFeePerGas ?? 0n) + 1n,
    });
    const hash = await broadcast(Buffer.from(moved.slice(2), 'hex').toString('base64'));
    await reconciler.runOnce();
    const seen = await status(buyer.key, b.paymentId);
    assert.equal(seen.status, 'confirmed');
    assert.equal(seen.signature, hash);
  });

  it('expires a transaction never broadcast: by block height, and by expiresAt', async () => {
    const byHeight = (await build({ recipientAddress: seller.wallet, amount: 0.5 })).json();
    const byTime = (await build({ recipientAddress: seller.wallet, amount: 0.6 })).json();
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, byHeight.paymentId)).status, 'pending');

    // A worker whose clock is 61 s ahead: past expiresAt, still within lastValidBlockHeight.
    const timeTravel = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      instanceId: 'evm-local-late',
      recheckMs: 0,
      now: () => Date.now() + 61_000,
    });
    await timeTravel.runOnce();
    const expired = await status(buyer.key, byTime.paymentId);
    assert.equal(expired.status, 'expired');
    assert.equal(expired.signature, null);

    await f.anvil.mine({ blocks: 151 });
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, byHeight.paymentId)).status, 'expired');
    const events = (await f.gw.store.events.listAfter(buyer.accountId, 0, 1000))
      .filter((e) => e.paymentId === byHeight.paymentId)
      .map((e) => e.type);
    assert.deepEqual(events, ['payment.expired']);
  });

  it('never confirms a tampered copy that reuses the reference with another amount or recipient', async () => {
    const thief = newEvmLocalWallet().address;
    const b = (await build({ recipientAddress: seller.wallet, amount: 0.01 })).json();
    for (const [to, amount] of [
      [thief, ETH / 100n],
      [seller.wallet, ETH / 1000n],
    ] as const) {
      const forged = await f.chain.prepareTransfer({
        from: payer.address,
        to,
        amount,
        memo: b.paymentId,
        reference: b.reference,
      });
      await broadcast(Buffer.from(forged.unsigned).toString('base64'));
    }
    await reconciler.runOnce();
    assert.equal((await status(buyer.key, b.paymentId)).status, 'pending');
    const receive = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: b.paymentProof,
      expectedAmount: 0.001,
      timeout: 1,
    });
    assert.equal(receive.statusCode, 422);
    assert.deepEqual(receive.json().error.details, { paymentProof: 'not_found' });
  });

  it('refuses bad requests and a payer that cannot pay, before recording anything', async () => {
    const cases: [Record<string, unknown>, string, Record<string, string>][] = [
      [
        { recipientAddress: seller.wallet, amount: 0.0009 },
        'INVALID_PARAMETERS',
        { amount: 'must be between 0.001 and 100' },
      ],
      [
        { recipientAddress: seller.wallet, amount: 1, priorityFee: 0.1 },
        'INVALID_PARAMETERS',
        { priorityFee: 'must be between 0.00001 and 0.01' },
      ],
      [
        { recipientAddress: '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin', amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'must be a evm address' },
      ],
      [
        { recipientAddress: payer.address.toLowerCase(), amount: 1 },
        'INVALID_RECIPIENT',
        { recipientAddress: 'must differ from walletAddress' },
      ],
      [
        { walletAddress: '0x1234', recipientAddress: seller.wallet, amount: 1 },
        'INVALID_PARAMETERS',
        { walletAddress: 'must be a Solana (base58) or EVM (0x…) address' },
      ],
    ];
    for (const [body, code, details] of cases) {
      const res = await build(body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.code, code, JSON.stringify(body));
      assert.deepEqual(res.json().error.details, details, JSON.stringify(body));
    }
    const poor = newEvmLocalWallet();
    const res = await build({ walletAddress: poor.address, recipientAddress: seller.wallet, amount: 1 });
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(res.json().error.code, 'INSUFFICIENT_BALANCE');
    // Nothing was recorded: the account has no payment from that address, which is not its wallet.
    const history = await f.get(buyer.key, `/payment/history/${poor.address}`);
    assert.equal(history.statusCode, 403, history.body);
  });

  it('answers a retried build with the same Idempotency-Key with the same transaction', async () => {
    const body = { recipientAddress: seller.wallet, amount: 0.003 };
    const first = await build(body, { 'idempotency-key': 'evm-local-1' });
    const again = await build(body, { 'idempotency-key': 'evm-local-1' });
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(again.json(), first.json());
  });
});
