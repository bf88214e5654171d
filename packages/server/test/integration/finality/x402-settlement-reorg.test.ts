import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSolanaRpc, generateKeyPairSigner, type Address as SolanaAddress } from '@solana/kit';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { createPermit2ApprovalTx } from '@x402/evm';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { type Address, createWalletClient, type Hex, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import type { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { countingReconciler } from '../../support/counting-reconciler.ts';
import { ETH, type EvmPaymentFixture, startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import type { Party } from '../../support/party.ts';
import { type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { until } from '../../support/until.ts';
import {
  evmExactRequirements,
  evmPayload,
  spendNonceOnAnotherAuthorization,
  stockPayload,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';

/** A buyer's signed x402 `exact` payment of 0.02 USDC to the seller, and how the buyer can undo it. */
interface X402Payment {
  /** The PAYMENT-SIGNATURE header a seller's app passes to /payment/receive. */
  readonly proof: string;
  /** Spends what the payment needs on something else, so its settlement's bytes can no longer pay. */
  spendElsewhere(): Promise<void>;
}

/**
 * An x402 `exact` payment settled by gate402's built-in facilitator (its fee payer signed, or co-signed,
 * the settlement transaction, stored before the first broadcast) whose slot or block leaves the chain:
 * the reconciler broadcasts the settlement's stored bytes again — the same signature, never re-signed —
 * and the payment keeps its id in the new slot or block; when those bytes can no longer pay, the payment
 * is `reverted`, with payment.reverted, and its proof is refused from then on. How the buyer pays and
 * undoes it, how the chain is reorganised and how it finalizes are the family's.
 */
interface SettlementReorgFamily<F> {
  readonly name: string;
  /** The word for where a transaction lands, for test names: slot, block. */
  readonly block: string;
  /** What undoes the buyer's payment, for the test's name. */
  readonly undone: string;
  /** The statuses a payment may have right after its settlement landed again (a slow machine may finalize it). */
  readonly relanded: readonly string[];
  start(): Promise<F & { close(): Promise<void> }>;
  shared(raw: F): FamilyPaymentFixture;
  adapter(raw: F): ChainAdapter;
  /** Whatever the seller needs before an `exact` payment can reach it (Solana: its USDC account). */
  prepareSeller(raw: F, seller: Party): Promise<void>;
  pay(raw: F, seller: Party): Promise<X402Payment>;
  /** Waits until the settlement `signature` is where the chain answers for it (confirmed). */
  settled(raw: F, signature: string): Promise<void>;
  usdcOf(raw: F, owner: string): Promise<bigint>;
  /** Takes the block (slot) `slot` and everything after it out of the chain. */
  dropFrom(raw: F, slot: bigint): Promise<void>;
  /** Lets the chain move on after a reorg (anvil: 3 new blocks; the localnet's slots tick by themselves). */
  moveOn(raw: F): Promise<void>;
  inChain(raw: F, signature: string): Promise<boolean>;
  /** Waits for `signature` to land again and succeed; the slot (block number) it is in. */
  landed(raw: F, signature: string): Promise<bigint>;
  /** After the first resend of bytes that can no longer pay: what the chain did with them (EVM: mined, failed). */
  resentFailed(raw: F, signature: string): Promise<void>;
  /** Waits until the chain has finalized past `slot`. */
  finalizePast(raw: F, slot: bigint): Promise<void>;
}

function settlementReorgs<F>(family: SettlementReorgFamily<F>): void {
  describe(`reorgs on ${family.name}: an x402 settlement of the built-in facilitator whose ${family.block} leaves the chain`, () => {
    let raw: F & { close(): Promise<void> };
    let f: FamilyPaymentFixture;
    let seller: Party;
    let reconciler: PaymentReconciler;
    let reorgs: () => Promise<Record<string, number>>;

    before(async () => {
      raw = await family.start();
      f = family.shared(raw);
      await f.gw.services.facilitator.start();
      seller = await f.party(0n, 'premium');
      await family.prepareSeller(raw, seller);
      const counting = countingReconciler(f.gw, 'x402-reorg-worker');
      reconciler = counting.reconciler;
      reorgs = () => counting.reorgCounts(f.network);
    });
    after(() => raw.close());

    const stored = async (id: string) => {
      const payment = await f.gw.store.payments.get(id);
      assert.ok(payment, id);
      return payment;
    };
    async function typesOf(paymentId: string) {
      return (await f.gw.store.events.listAfter(seller.accountId, 0, 1000))
        .filter((e) => e.paymentId === paymentId)
        .map((e) => e.type);
    }
    const receive = (proof: string) =>
      f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: proof,
        expectedAmount: 0.02,
        asset: 'USDC',
      });

    /** A buyer pays the seller 0.02 USDC: /payment/receive settles it with the built-in facilitator. */
    async function paid() {
      const payment = await family.pay(raw, seller);
      const received = await receive(payment.proof);
      assert.equal(received.statusCode, 200, received.body);
      const r = received.json() as { paymentId: string; status: string; signature: string };
      assert.equal(r.status, 'confirmed');
      const settlement = await f.gw.store.settlements.findByPayment(r.paymentId);
      assert.ok(settlement, 'the facilitator kept the settlement');
      assert.equal(settlement.transactionId, r.signature);
      await family.settled(raw, r.signature);
      const before = await stored(r.paymentId);
      assert.ok(before.slot !== null);
      return { ...payment, ...r, settlement, slot: before.slot };
    }

    it(`the stored settlement bytes are broadcast again (same signature) and land in a new ${family.block}; same payment id, paid once, then finalized`, async () => {
      const { paymentId, signature, settlement, slot } = await paid();
      const sellerUsdc = await family.usdcOf(raw, seller.wallet);

      await family.dropFrom(raw, slot);
      await family.moveOn(raw);
      assert.equal(
        await family.inChain(raw, signature),
        false,
        `the ${family.block} and its settlement are gone`,
      );
      assert.equal(await family.usdcOf(raw, seller.wallet), sellerUsdc - 20000n);

      await reconciler.runOnce(); // resends the settlement's bytes
      const landed = await family.landed(raw, signature);
      await reconciler.runOnce(); // the payment sees it in its new slot (block)
      assert.ok(landed > slot, `a new ${family.block}`);
      const moved = await stored(paymentId);
      assert.ok(family.relanded.includes(moved.status), moved.status);
      assert.equal(moved.signature, signature, 'the same transaction: the same signed bytes');
      assert.equal(moved.slot, landed);
      const blockHeight = await family.adapter(raw).blockHeightOf(landed);
      assert.equal(moved.blockHeight, blockHeight);
      assert.equal(moved.error, null);
      const kept = await f.gw.store.settlements.findByPayment(paymentId);
      assert.equal(kept?.signedTransaction, settlement.signedTransaction, 'never re-signed');
      assert.equal(kept?.transactionId, signature);
      assert.equal(await family.usdcOf(raw, seller.wallet), sellerUsdc, 'paid once');
      const status = (await f.get(seller.key, `/payment/status/${paymentId}`)).json();
      assert.equal(status.blockHeight, Number(blockHeight));

      await family.finalizePast(raw, landed);
      await reconciler.runOnce();
      assert.equal((await stored(paymentId)).status, 'finalized');
      assert.deepEqual(await typesOf(paymentId), ['payment.received', 'payment.finalized']);
      assert.deepEqual(await reorgs(), { reorged: 1, resent: 1 });
    });

    it(`bytes that can no longer pay (${family.undone} meanwhile): reverted, payment.reverted, and a later receive of the proof is refused`, async () => {
      const { proof, paymentId, signature, slot, spendElsewhere } = await paid();
      const sellerUsdc = await family.usdcOf(raw, seller.wallet);

      await family.dropFrom(raw, slot);
      assert.equal(await family.inChain(raw, signature), false);
      // Before the gateway resends, the buyer spends what the payment needs on something else.
      await spendElsewhere();
      assert.equal(await family.usdcOf(raw, seller.wallet), sellerUsdc - 20000n);

      await reconciler.runOnce(); // resends: the bytes fail on chain or are refused, for want of funds
      await family.resentFailed(raw, signature);
      // Once they can no longer land: reverted.
      await until(
        'the payment reverted',
        async () => {
          await reconciler.runOnce();
          return (await stored(paymentId)).status === 'reverted';
        },
        30_000,
      );
      const p = await stored(paymentId);
      assert.equal(p.status, 'reverted', p.error ?? '');
      assert.equal(await family.usdcOf(raw, seller.wallet), sellerUsdc - 20000n, 'the seller was not paid');
      const status = (await f.get(seller.key, `/payment/status/${paymentId}`)).json();
      assert.equal(status.status, 'reverted');
      assert.deepEqual(await typesOf(paymentId), ['payment.received', 'payment.reverted']);
      const history = (await f.get(seller.key, `/payment/history/${seller.wallet}`)).json();
      assert.equal(
        history.payments.find((h: { paymentId: string }) => h.paymentId === paymentId)?.status,
        'reverted',
      );

      // The proof backs nothing now: a later receive of it is refused, and records nothing.
      const again = await receive(proof);
      assert.equal(again.statusCode, 422, again.body);
      assert.equal(again.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
      assert.equal(again.json().error.details.paymentProof, 'reverted');
      const verified = await f.post(seller.key, '/v1/payments/verify', {
        payment_proof: proof,
        amount: 20000,
        asset: 'USDC',
        recipient: seller.wallet,
      });
      assert.equal(verified.json().verified, false);
      const after = (await f.get(seller.key, `/payment/history/${seller.wallet}`)).json();
      assert.equal(after.total, history.total, 'nothing recorded');
      assert.equal((await typesOf(paymentId)).length, 2);
      assert.deepEqual(await reorgs(), { reorged: 2, resent: 2, reverted: 1 });
    });
  });
}

/** Deep enough that a confirmed settlement is far from finalized when its slots are dropped. */
const FINALIZED_DEPTH = 100;

/** What a landed, successful transaction's slot is on the localnet; undefined while it is not there. */
async function solanaSlotOf(f: PaymentFixture, signature: string): Promise<bigint | undefined> {
  const outcome = await f.chain.adapter.getSignatureStatus(signature);
  return outcome?.status === 'confirmed' || outcome?.status === 'finalized' ? outcome.slot : undefined;
}

// Solana: the buyer's transaction co-signed by the facilitator's fee payer; the localnet drops slots.
settlementReorgs<PaymentFixture>({
  name: 'the localnet',
  block: 'slot',
  undone: 'the buyer spent the USDC on another payment',
  relanded: ['confirmed', 'finalized'],
  start: () =>
    startPaymentFixture({ chain: { testHooks: true, slotMs: 20, finalizedDepth: FINALIZED_DEPTH } }),
  shared: onSolana,
  adapter: (f) => f.chain.adapter,
  // The seller's USDC account exists (an `exact` payment does not create it).
  prepareSeller: async (f, seller) => {
    const funded = await f.post(seller.key, '/faucet', {
      address: seller.wallet,
      amount: 0.01,
      token: 'USDC',
    });
    assert.equal(funded.statusCode, 200, funded.body);
  },
  // A buyer holding exactly 0.02 USDC.
  pay: async (f, seller) => {
    const feePayer = f.gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    const buyer = await generateKeyPairSigner();
    const funded = await f.post(seller.key, '/faucet', {
      address: buyer.address,
      amount: 0.02,
      token: 'USDC',
    });
    assert.equal(funded.statusCode, 200, funded.body);
    const requirements = svmExactRequirements(f.chain, { amount: '20000', payTo: seller.wallet, feePayer });
    return {
      proof: encodePaymentSignatureHeader(await svmPayload(f.chain, buyer, requirements)),
      spendElsewhere: async () => {
        const elsewhere = await onSolana(f).party(0n, 'premium');
        await f.post(elsewhere.key, '/faucet', { address: elsewhere.wallet, amount: 0.01, token: 'USDC' });
        const other = svmExactRequirements(f.chain, { amount: '20000', payTo: elsewhere.wallet, feePayer });
        const spent = await f.post(elsewhere.key, '/payment/receive', {
          walletAddress: elsewhere.wallet,
          paymentProof: encodePaymentSignatureHeader(await svmPayload(f.chain, buyer, other)),
          expectedAmount: 0.02,
          asset: 'USDC',
        });
        assert.equal(spent.statusCode, 200, spent.body);
        assert.equal(await solanaUsdcOf(f, buyer.address), 0n);
      },
    };
  },
  settled: (f, signature) =>
    until('the settlement confirmed', async () => {
      const outcome = await f.chain.adapter.getSignatureStatus(signature);
      return outcome?.status === 'confirmed';
    }),
  usdcOf: solanaUsdcOf,
  dropFrom: async ({ chain: { localnet } }, slot) => {
    const dropped = localnet.dropSlots(localnet.slot - Number(slot));
    assert.equal(dropped[0], Number(slot));
  },
  moveOn: async () => {},
  inChain: async (f, signature) => (await f.chain.adapter.getSignatureStatus(signature)) !== undefined,
  landed: async (f, signature) => {
    await until(
      'the same transaction to land again',
      async () => (await solanaSlotOf(f, signature)) !== undefined,
    );
    const slot = await solanaSlotOf(f, signature);
    assert.ok(slot !== undefined);
    return slot;
  },
  // Resent bytes fail or are refused: the reconciler's passes tell.
  resentFailed: async () => {},
  finalizePast: (f, slot) =>
    until('finality past the new slot', async () => (await f.chain.adapter.finalizedSlot()) >= slot),
});

async function solanaUsdcOf(f: PaymentFixture, owner: string): Promise<bigint> {
  const rpc = createSolanaRpc(f.chain.localnet.rpcUrl);
  const accounts = await rpc
    .getTokenAccountsByOwner(
      owner as SolanaAddress,
      { mint: f.chain.localnet.usdcMint.address as SolanaAddress },
      { commitment: 'confirmed', encoding: 'jsonParsed' },
    )
    .send();
  return accounts.value.reduce(
    (sum, a) =>
      sum +
      BigInt(
        (a.account.data as { parsed: { info: { tokenAmount: { amount: string } } } }).parsed.info.tokenAmount
          .amount,
      ),
    0n,
  );
}

/** anvil (no block time) calls a block finalized 64 blocks deep. */
const PAST_FINALITY = 70;
const BALANCE_OF = parseAbi(['function balanceOf(address) view returns (uint256)']);

interface Authorization {
  readonly from: Address;
  readonly validAfter: string;
  readonly validBefore: string;
  readonly nonce: Hex;
}

const receiptOf = (f: EvmPaymentFixture, hash: string) =>
  f.anvil.getTransactionReceipt({ hash: hash as Hex }).then(
    (r) => r,
    () => undefined,
  );
const receiptAgain = (f: EvmPaymentFixture, hash: string) =>
  // The resent bytes are mined on their own time: wait for their receipt before the next look.
  f.anvil.waitForTransactionReceipt({ hash: hash as Hex, pollingInterval: 20, timeout: 5_000 });

// EVM: transferWithAuthorization signed by the facilitator's fee payer; anvil_rollback takes blocks out.
settlementReorgs<EvmPaymentFixture>({
  name: 'anvil',
  block: 'block',
  undone: 'the authorization nonce used by another transaction',
  relanded: ['confirmed'],
  start: () => startEvmPaymentFixture(),
  shared: onEvm,
  adapter: (f) => f.chain,
  prepareSeller: async () => {},
  pay: async (f, seller) => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await f.post(seller.key, '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    assert.equal(funded.statusCode, 200, funded.body);
    const payload = await evmPayload(
      buyer,
      evmExactRequirements(f.evm, { amount: '20000', payTo: seller.wallet }),
      'https://shop.example/report',
    );
    const authorization = (payload.payload as { authorization: Authorization }).authorization;
    return {
      proof: encodePaymentSignatureHeader(payload),
      // The buyer spends the authorization's nonce on a transfer to itself.
      spendElsewhere: async () => {
        const submitter = privateKeyToAccount(generatePrivateKey());
        await f.chain.faucet?.fundNative(submitter.address, ETH);
        await spendNonceOnAnotherAuthorization(f.evm, buyer, authorization, submitter);
      },
    };
  },
  settled: async () => {},
  usdcOf: (f, owner) =>
    f.anvil.readContract({
      address: f.evm.usdc.address as Address,
      abi: BALANCE_OF,
      functionName: 'balanceOf',
      args: [owner as Address],
    }),
  // The settlement is in the newest block.
  dropFrom: async (f, slot) => {
    assert.equal(await f.anvil.getBlockNumber(), slot);
    await f.anvil.request({ method: 'anvil_rollback', params: [1] } as never as {
      method: 'anvil_mine';
      params: [Hex, Hex];
    });
  },
  moveOn: async (f) => {
    await f.anvil.mine({ blocks: 3 });
  },
  inChain: async (f, hash) => (await receiptOf(f, hash)) !== undefined,
  landed: async (f, hash) => {
    const landed = await receiptAgain(f, hash);
    assert.equal(landed.status, 'success');
    return landed.blockNumber;
  },
  // The fee payer's nonce is unused, so the resent bytes are mined, and the transfer fails on chain.
  resentFailed: async (f, hash) => {
    const failed = await receiptAgain(f, hash);
    assert.equal(failed.status, 'reverted');
  },
  finalizePast: async (f) => {
    await f.anvil.mine({ blocks: PAST_FINALITY });
  },
});

const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3' as const;

// EVM `upto`: the facilitator's settle of the actual amount (0.02 USDC of a 0.05 maximum) through x402's
// upto Permit2 proxy; the buyer undoes it by invalidating its Permit2 nonce.
settlementReorgs<EvmPaymentFixture>({
  name: 'anvil (upto)',
  block: 'block',
  undone: 'the buyer invalidated its Permit2 nonce',
  relanded: ['confirmed'],
  start: () => startEvmPaymentFixture(),
  shared: onEvm,
  adapter: (f) => f.chain,
  prepareSeller: async () => {},
  pay: async (f, seller) => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await f.chain.faucet?.fundNative(buyer.address, ETH);
    const funded = await f.post(seller.key, '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    assert.equal(funded.statusCode, 200, funded.body);
    const wallet = createWalletClient({ account: buyer, transport: http(f.evm.anvil.rpcUrl) });
    const approval = await wallet.sendTransaction({
      ...createPermit2ApprovalTx(f.evm.usdc.address as Address),
      chain: null,
    });
    await f.anvil.waitForTransactionReceipt({ hash: approval, pollingInterval: 20 });
    const facilitatorAddress = f.gw.services.facilitator.supported().signers['eip155:*']?.[0] ?? '';
    const payload = await stockPayload(
      new UptoEvmScheme(buyer),
      {
        scheme: 'upto',
        network: f.chain.info.id as `eip155:${string}`,
        asset: f.evm.usdc.address,
        amount: '50000',
        payTo: seller.wallet,
        maxTimeoutSeconds: 300,
        extra: { assetTransferMethod: 'permit2', facilitatorAddress },
      },
      'https://shop.example/report',
    );
    const nonce = BigInt(
      (payload.payload as { permit2Authorization: { nonce: string } }).permit2Authorization.nonce,
    );
    return {
      // /payment/receive settles expectedAmount (0.02 USDC), the seller's final amount.
      proof: encodePaymentSignatureHeader(payload),
      spendElsewhere: async () => {
        const hash = await wallet.writeContract({
          chain: null,
          address: PERMIT2,
          abi: parseAbi(['function invalidateUnorderedNonces(uint256 wordPos, uint256 mask)']),
          functionName: 'invalidateUnorderedNonces',
          args: [nonce >> 8n, 1n << (nonce & 0xffn)],
        });
        await f.anvil.waitForTransactionReceipt({ hash, pollingInterval: 20 });
      },
    };
  },
  settled: async () => {},
  usdcOf: (f, owner) =>
    f.anvil.readContract({
      address: f.evm.usdc.address as Address,
      abi: BALANCE_OF,
      functionName: 'balanceOf',
      args: [owner as Address],
    }),
  dropFrom: async (f, slot) => {
    assert.equal(await f.anvil.getBlockNumber(), slot);
    await f.anvil.request({ method: 'anvil_rollback', params: [1] } as never as {
      method: 'anvil_mine';
      params: [Hex, Hex];
    });
  },
  moveOn: async (f) => {
    await f.anvil.mine({ blocks: 3 });
  },
  inChain: async (f, hash) => (await receiptOf(f, hash)) !== undefined,
  landed: async (f, hash) => {
    const landed = await receiptAgain(f, hash);
    assert.equal(landed.status, 'success');
    return landed.blockNumber;
  },
  resentFailed: async (f, hash) => {
    const failed = await receiptAgain(f, hash);
    assert.equal(failed.status, 'reverted');
  },
  finalizePast: async (f) => {
    await f.anvil.mine({ blocks: PAST_FINALITY });
  },
});
