import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type {
  ChainAdapter,
  ChainTokenInfo,
  ChainTransaction,
  PreparedTransaction,
} from '../../src/chains/chain-adapter.ts';
import { ChainError } from '../../src/chains/chain-error.ts';
import type { NetworkInfo } from '../../src/domain/network.ts';
import { waitFor } from '../support/crash-harness.ts';

export const isChainError = (kind: ChainError['kind']) => (e: unknown) =>
  e instanceof ChainError && e.kind === kind;

/** One key pair made by the adapter; the secret is the form its `sign` takes. */
export interface Keypair {
  readonly address: string;
  readonly secretKey: Uint8Array;
}

/**
 * A chain family's adapter on a real local chain, and what the contract cannot know of the family:
 * its exact fees, how its token and transactions read, how its chain is made to move on. Each family
 * (Solana on the localnet, EVM on anvil) gives one, so both run the same assertions.
 */
export interface AdapterUnderTest {
  readonly adapter: ChainAdapter;
  /** What `adapter.info` must say of the network. */
  readonly network: Pick<NetworkInfo, 'id' | 'family' | 'isLocal' | 'nativeCurrency' | 'rpcUrl'>;
  /** A sender funded with ten whole units of the native currency. */
  readonly sender: Keypair;
  /** A transfer amount and priority fee that use every digit the family's units have. */
  readonly transfer: { readonly amount: bigint; readonly priorityFee: bigint };
  /**
   * The fee the landed transaction `signature` was charged, after the family's exact checks of it
   * against what `prepared` said (Solana: fixed lamports; EVM: gas used times the price paid).
   */
  landedFee(prepared: PreparedTransaction, signature: string): Promise<bigint>;
  /** The family's exact checks of the landed transfer as `getTransaction` reads it back. */
  checkLanded(
    tx: ChainTransaction,
    sent: { prepared: PreparedTransaction; reference: string; slot: bigint },
  ): Promise<void>;
  /** The USDC-like token and what `getTokenInfo` says of it beside its address, decimals and supply. */
  readonly usdc: {
    readonly address: string;
    /** How a user may also write the token's address (EVM: lower case); it reads the same. */
    readonly addressAsWritten: string;
    readonly facts: Partial<ChainTokenInfo>;
  };
  /** A well-formed transaction signature the chain has never seen; `i` makes each distinct. */
  unknownSignature(i: number): string;
  /** Moves the chain past `lastValidBlockHeight`, so nothing prepared with it can land any more. */
  expire(lastValidBlockHeight: bigint): Promise<void>;
  /** An adapter for the same network whose only RPC endpoint refuses connections. */
  down(): ChainAdapter;
  close(): Promise<void>;
}

/**
 * The behaviour every ChainAdapter must have against a real chain. Each family runs this same suite;
 * `familyOnly` declares, inside it and on the same chain, what only that family does.
 */
export function describeChainAdapterContract(
  name: string,
  open: () => Promise<AdapterUnderTest>,
  familyOnly: (under: () => AdapterUnderTest) => void = () => {},
): void {
  describe(`ChainAdapter contract: ${name}`, () => {
    let u: AdapterUnderTest;
    let chain: ChainAdapter;
    let sender: Keypair;

    before(async () => {
      u = await open();
      ({ adapter: chain, sender } = u);
    });
    after(() => u?.close());

    it('describes the network and answers ping', async () => {
      await chain.ping();
      const { id, family, isLocal, nativeCurrency, rpcUrl } = chain.info;
      assert.deepEqual({ id, family, isLocal, nativeCurrency, rpcUrl }, u.network);
      // A chain started a moment ago may still be at its first block: wait for the next one.
      await waitFor(async () => (await chain.getBlockHeight()) > 0n, 5_000, 50);
    });

    it('sends native currency with a priority fee, a memo and a reference, and reads it back exactly', async () => {
      const recipient = await chain.generateKeypair();
      const reference = await chain.generateKeypair();
      const { amount, priorityFee } = u.transfer;
      const memo = 'pay_TEST memo ✓';
      const prepared = await chain.prepareTransfer({
        from: sender.address,
        to: recipient.address,
        amount,
        priorityFee,
        memo,
        reference: reference.address,
      });
      assert.equal(prepared.feePayer, sender.address);

      const before = await chain.getBalance(sender.address);
      const signed = await chain.sign(prepared, sender.secretKey);
      assert.equal(await chain.broadcast(signed.wire), signed.signature);
      const outcome = await chain.waitForConfirmation(signed.signature, signed.lastValidBlockHeight, 10_000);
      assert.equal(outcome.status, 'confirmed');
      assert.ok('slot' in outcome);
      const fee = await u.landedFee(prepared, signed.signature);
      assert.ok(fee <= prepared.fee, 'the prepared fee is the most that can be charged');

      assert.equal(await chain.getBalance(recipient.address), amount);
      assert.equal(await chain.getBalance(sender.address), before - amount - fee);

      const tx = await chain.getTransaction(signed.signature);
      assert.ok(tx);
      assert.equal(tx.signature, signed.signature);
      assert.equal(tx.slot, outcome.slot);
      assert.equal(tx.fee, fee);
      assert.equal(tx.error, null);
      assert.equal(tx.feePayer, sender.address);
      assert.deepEqual(tx.nativeTransfers, [{ from: sender.address, to: recipient.address, amount }]);
      assert.deepEqual(tx.memos, [memo]);
      assert.ok(tx.accounts.includes(reference.address));
      await u.checkLanded(tx, { prepared, reference: reference.address, slot: outcome.slot });

      const found = await chain.findSignatures(reference.address);
      assert.deepEqual(found, [{ signature: signed.signature, slot: outcome.slot, error: null }]);
      const status = await chain.getSignatureStatus(signed.signature);
      // A fast chain may have finalized it already.
      assert.ok(status?.status === 'confirmed' || status?.status === 'finalized', status?.status);
      assert.equal(status.slot, outcome.slot);
    });

    it('refuses a second broadcast of the same transaction', async () => {
      const recipient = await chain.generateKeypair();
      const prepared = await chain.prepareTransfer({
        from: sender.address,
        to: recipient.address,
        amount: u.transfer.amount,
      });
      const signed = await chain.sign(prepared, sender.secretKey);
      assert.equal(await chain.broadcast(signed.wire), signed.signature);
      const outcome = await chain.waitForConfirmation(signed.signature, signed.lastValidBlockHeight, 10_000);
      assert.equal(outcome.status, 'confirmed');
      await assert.rejects(chain.broadcast(signed.wire), isChainError('already_processed'));
      assert.equal(await chain.getBalance(recipient.address), u.transfer.amount, 'paid once');
    });

    it('reports insufficient funds as such and charges nothing', async () => {
      const poor = await chain.generateKeypair();
      await chain.faucet?.fundNative(poor.address, 1_000_000n);
      // All it holds, with nothing left for the fee.
      const prepared = await chain.prepareTransfer({
        from: poor.address,
        to: sender.address,
        amount: 1_000_000n,
      });
      const signed = await chain.sign(prepared, poor.secretKey);
      await assert.rejects(chain.broadcast(signed.wire), isChainError('insufficient_funds'));
      assert.equal(await chain.getBalance(poor.address), 1_000_000n, 'nothing was charged');
    });

    it('reads the USDC-like token exactly and says undefined for an account that is no token', async () => {
      const owner = await chain.generateKeypair();
      const before = await chain.getTokenInfo(u.usdc.address);
      assert.ok(before);
      await chain.faucet?.fundToken('USDC', owner.address, 2_500_000n);
      const expected = {
        address: u.usdc.address,
        decimals: 6,
        supply: before.supply + 2_500_000n,
        ...u.usdc.facts,
      };
      const info = await chain.getTokenInfo(u.usdc.addressAsWritten);
      assert.ok(info);
      // What the family says of the token, exactly; fields a family adds beyond these have tests of their own.
      const read = Object.fromEntries(
        Object.keys(expected).map((key) => [key, info[key as keyof ChainTokenInfo]]),
      );
      assert.deepEqual(read, expected);
      assert.equal(await chain.getTokenInfo(sender.address), undefined);
    });

    it('answers undefined for an unknown transaction and pending when the wait runs out', async () => {
      const unknown = u.unknownSignature(0);
      assert.equal(await chain.getTransaction(unknown), undefined);
      assert.equal(await chain.getSignatureStatus(unknown), undefined);
      const height = await chain.getBlockHeight();
      assert.deepEqual(await chain.waitForConfirmation(unknown, height + 1_000n, 300), { status: 'pending' });
    });

    /** Runs `work`, then asserts that Node printed no warning meanwhile (a listener leak warns). */
    const withoutWarnings = async (work: () => Promise<void>) => {
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(warning.name);
      process.on('warning', onWarning);
      try {
        await work();
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(warnings, []);
      } finally {
        process.off('warning', onWarning);
      }
    };

    it('leaves no listener behind on its lifetime after a long wait of many polls (no leak per poll)', () =>
      withoutWarnings(async () => {
        const height = await chain.getBlockHeight();
        // Fast polls for a second: dozens of sleeps on the one lifetime signal, past Node's warning at 11.
        const outcome = await chain.waitForConfirmation(u.unknownSignature(1), height + 1_000n, 1_000);
        assert.deepEqual(outcome, { status: 'pending' });
      }));

    it('waits for many transactions at once without a listener warning (20 concurrent waits)', () =>
      withoutWarnings(async () => {
        const height = await chain.getBlockHeight();
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            chain.waitForConfirmation(u.unknownSignature(100 + i), height + 1_000n, 300),
          ),
        );
        assert.deepEqual(
          outcomes.map((o) => o.status),
          Array(20).fill('pending'),
        );
      }));

    it('reports a transaction that was never sent as expired once its last valid block is past', async () => {
      const prepared = await chain.prepareTransfer({ from: sender.address, to: sender.address, amount: 1n });
      const signed = await chain.sign(prepared, sender.secretKey);
      assert.equal(signed.lastValidBlockHeight, prepared.lastValidBlockHeight);
      await u.expire(signed.lastValidBlockHeight);
      assert.ok((await chain.getBlockHeight()) > signed.lastValidBlockHeight);
      assert.deepEqual(
        await chain.waitForConfirmation(signed.signature, signed.lastValidBlockHeight, 5_000),
        {
          status: 'expired',
        },
      );
    });

    it('says unavailable, promptly, when the RPC endpoint is down', async () => {
      const down = u.down();
      const started = Date.now();
      await assert.rejects(down.getBalance(sender.address), isChainError('unavailable'));
      assert.ok(Date.now() - started < 3_000);
      await down.close();
    });

    familyOnly(() => u);
  });
}
