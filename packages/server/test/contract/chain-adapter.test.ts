import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  bytesToHex,
  createPublicClient,
  createTestClient,
  type Hex,
  http,
  type PublicClient,
  parseTransaction,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { EvmAdapter } from '../../src/chains/evm/evm-adapter.ts';
import { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { startJsonRpcProxy } from '../support/json-rpc-proxy.ts';
import { startTestEvm, type TestEvm } from '../support/test-anvil.ts';
import { startTestChain, type TestChain } from '../support/test-localnet.ts';
import { describeChainAdapterContract, isChainError, type Keypair } from './chain-adapter-contract.ts';

const SOL = 1_000_000_000n;
const ETH = 10n ** 18n;
const GWEI = 10n ** 9n;

// Solana: the adapter against a real localnet with 20 ms slots.
let solana: TestChain;
let solanaSender: Keypair;

describeChainAdapterContract(
  'Solana on the localnet',
  async () => {
    solana = await startTestChain();
    const chain = solana.adapter;
    solanaSender = await chain.generateKeypair();
    await chain.faucet?.fundNative(solanaSender.address, 10n * SOL);
    const usdc = chain.info.tokens[0];
    assert.ok(usdc);
    const transfer = { amount: 1_234_567_890n, priorityFee: 100_000n };
    return {
      adapter: chain,
      network: {
        id: solana.localnet.network,
        family: 'solana',
        isLocal: true,
        nativeCurrency: { symbol: 'SOL', decimals: 9 },
        rpcUrl: solana.localnet.rpcUrl,
      },
      sender: solanaSender,
      transfer,
      // 5,000 lamports a signature, plus the priority fee asked, exactly.
      landedFee: async (prepared, signature) => {
        assert.equal(prepared.priorityFee, transfer.priorityFee);
        assert.equal(prepared.fee, 105_000n);
        const tx = await chain.getTransaction(signature);
        assert.equal(tx?.fee, 105_000n);
        return 105_000n;
      },
      checkLanded: async () => {},
      usdc: {
        address: usdc.address,
        addressAsWritten: usdc.address,
        facts: {
          mintAuthority: solana.localnet.mintAuthority.address,
          freezeAuthority: null,
          program: 'spl-token',
        },
      },
      // 64 bytes, base58 as Solana writes signatures.
      unknownSignature: (i) => encodeBase58(new Uint8Array(64).fill(0x55).fill(i % 256, 0, 1)),
      expire: async (lastValidBlockHeight) => {
        const height = await chain.getBlockHeight();
        solana.localnet.advanceSlots(Number(lastValidBlockHeight - height) + 2);
      },
      down: () => new SolanaAdapter({ info: chain.info, rpcUrl: 'http://127.0.0.1:1' }),
      close: () => solana.close(),
    };
  },
  () => {
    it('confirms by polling when subscriptions are unavailable', async () => {
      const polling = new SolanaAdapter({
        info: solana.adapter.info,
        rpcUrl: solana.localnet.rpcUrl,
        wsUrl: 'ws://127.0.0.1:1',
      });
      try {
        const recipient = await polling.generateKeypair();
        const prepared = await polling.prepareTransfer({
          from: solanaSender.address,
          to: recipient.address,
          amount: SOL,
        });
        const signed = await polling.sign(prepared, solanaSender.secretKey);
        await polling.broadcast(signed.wire);
        const outcome = await polling.waitForConfirmation(
          signed.signature,
          signed.lastValidBlockHeight,
          10_000,
        );
        // With 20 ms slots the transaction may already be finalized by the first poll.
        assert.ok(outcome.status === 'confirmed' || outcome.status === 'finalized', outcome.status);
      } finally {
        await polling.close();
      }
    });

    it('refuses a transaction past its lastValidBlockHeight (on a localnet whose slots move only when told) and reports an unsent one expired', async () => {
      const chain = await startTestChain({ slotMs: 0 });
      try {
        const payer = await chain.adapter.generateKeypair();
        chain.localnet.airdrop(payer.address, 5n * SOL);
        chain.localnet.advanceSlots(2);
        const prepared = await chain.adapter.prepareTransfer({
          from: payer.address,
          to: (await chain.adapter.generateKeypair()).address,
          amount: SOL,
        });
        const signed = await chain.adapter.sign(prepared, payer.secretKey);
        chain.localnet.advanceSlots(160);
        assert.ok((await chain.adapter.getBlockHeight()) > prepared.lastValidBlockHeight);
        await assert.rejects(chain.adapter.broadcast(signed.wire), isChainError('blockhash_expired'));
        const outcome = await chain.adapter.waitForConfirmation(
          signed.signature,
          signed.lastValidBlockHeight,
          5_000,
        );
        assert.deepEqual(outcome, { status: 'expired' });
      } finally {
        await chain.close();
      }
    });
  },
);

// EVM: the adapter against the embedded anvil, as `npm start` runs it.
let evm: TestEvm;
let evmSender: Keypair;
let client: PublicClient;

describeChainAdapterContract(
  'EVM on the embedded anvil',
  async () => {
    evm = await startTestEvm();
    const chain = evm.adapter;
    client = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
    evmSender = await chain.generateKeypair();
    await chain.faucet?.fundNative(evmSender.address, 10n * ETH);
    const receiptOf = (signature: string) => client.waitForTransactionReceipt({ hash: signature as Hex });
    return {
      adapter: chain,
      network: {
        id: 'eip155:31337',
        family: 'evm',
        isLocal: true,
        nativeCurrency: { symbol: 'ETH', decimals: 18 },
        rpcUrl: evm.anvil.rpcUrl,
      },
      sender: evmSender,
      transfer: { amount: 1_234_567_890_123_456_789n, priorityFee: 50_000_000_000_000n },
      // The tip asked is the tip paid, per gas; the base fee is the block's.
      landedFee: async (prepared, signature) => {
        const receipt = await receiptOf(signature);
        const tipPerGas = 50_000_000_000_000n / receipt.gasUsed;
        assert.equal(prepared.priorityFee, tipPerGas * receipt.gasUsed);
        const block = await client.getBlock({ blockNumber: receipt.blockNumber });
        assert.equal(
          receipt.effectiveGasPrice,
          (block.baseFeePerGas ?? 0n) + tipPerGas,
          'the tip asked is the tip paid',
        );
        return receipt.gasUsed * receipt.effectiveGasPrice;
      },
      checkLanded: async (tx, { prepared, reference, slot }) => {
        const receipt = await receiptOf(tx.signature);
        const memoBytes = new TextEncoder().encode(tx.memos[0] ?? '').length;
        // 21,000 + EIP-7623 floor of 10 gas per calldata token (4 per non-zero byte); the reference is random.
        assert.equal(
          receipt.gasUsed,
          21_000n + 10n * 4n * BigInt(memoBytes) + 10n * calldataTokens(reference),
        );
        const block = await client.getBlock({ blockNumber: receipt.blockNumber });
        assert.equal(slot, receipt.blockNumber);
        assert.equal(tx.blockTime, Number(block.timestamp) * 1000);
        assert.deepEqual(tx.accounts, [evmSender.address, tx.nativeTransfers[0]?.to, reference]);
        const found = await chain.findSignatures(reference);
        assert.deepEqual(await chain.findSignatures(reference.toLowerCase(), { limit: 1 }), found);
        // Told when it was prepared, the scan starts there (that block included, to be safe): it still finds
        // it, and a search for a transaction prepared after its block does not.
        assert.deepEqual(
          await chain.findSignatures(reference, { preparedFor: prepared.lastValidBlockHeight }),
          found,
        );
        assert.deepEqual(
          await chain.findSignatures(reference, { preparedFor: prepared.lastValidBlockHeight + 2n }),
          [],
          'a transaction prepared after the block it is in cannot be this one',
        );
        assert.deepEqual(await chain.getSignatureStatus(tx.signature), { status: 'confirmed', slot });
      },
      usdc: {
        address: evm.usdc.address,
        addressAsWritten: evm.usdc.address.toLowerCase(),
        facts: {
          name: 'USD Coin',
          symbol: 'USDC',
          mintAuthority: evm.operator,
          freezeAuthority: null,
          program: 'erc20',
        },
      },
      unknownSignature: (i) => `0x${i.toString(16).padStart(64, 'e')}`,
      // A transaction is valid for 150 blocks from the height it was prepared at.
      expire: async (lastValidBlockHeight) => {
        const height = await chain.getBlockHeight();
        assert.equal(lastValidBlockHeight, height + 150n);
        const test = createTestClient({ mode: 'anvil', transport: http(evm.anvil.rpcUrl) });
        await test.mine({ blocks: 151 });
      },
      down: () => new EvmAdapter({ info: chain.info, rpcUrl: 'http://127.0.0.1:1', chainId: 31337 }),
      close: async () => {
        await evm.close();
        evm.dispose();
      },
    };
  },
  () => {
    it('makes 32-byte secp256k1 keys with checksummed addresses', async () => {
      const pair = await evm.adapter.generateKeypair();
      assert.equal(pair.secretKey.length, 32);
      assert.match(pair.address, /^0x[0-9a-fA-F]{40}$/);
      assert.notEqual(pair.address, pair.address.toLowerCase(), 'EIP-55 mixed case');
    });

    it('uses the node’s suggested tip when no priority fee is given', async () => {
      const recipient = await evm.adapter.generateKeypair();
      const suggested = BigInt(await client.request({ method: 'eth_maxPriorityFeePerGas' }));
      const latest = await client.getBlock();
      const prepared = await evm.adapter.prepareTransfer({
        from: evmSender.address,
        to: recipient.address,
        amount: 1n,
      });
      assert.ok(suggested >= GWEI, 'anvil suggests at least 1 gwei');
      assert.equal(prepared.priorityFee, 21_000n * suggested);
      assert.equal(prepared.fee, 21_000n * (2n * (latest.baseFeePerGas ?? 0n) + suggested));
      const signed = await evm.adapter.sign(prepared, evmSender.secretKey);
      await evm.adapter.broadcast(signed.wire);
      const receipt = await client.waitForTransactionReceipt({ hash: signed.signature as Hex });
      const block = await client.getBlock({ blockNumber: receipt.blockNumber });
      assert.equal(receipt.gasUsed, 21_000n);
      assert.equal(receipt.effectiveGasPrice, (block.baseFeePerGas ?? 0n) + suggested);
    });

    it('refuses a transaction whose nonce another one used', async () => {
      const recipient = await evm.adapter.generateKeypair();
      const first = await evm.adapter.prepareTransfer({
        from: evmSender.address,
        to: recipient.address,
        amount: 5n,
      });
      const second = await evm.adapter.prepareTransfer({
        from: evmSender.address,
        to: recipient.address,
        amount: 7n,
      });
      await evm.adapter.broadcast((await evm.adapter.sign(first, evmSender.secretKey)).wire);
      await assert.rejects(
        evm.adapter.broadcast((await evm.adapter.sign(second, evmSender.secretKey)).wire),
        isChainError('already_processed'),
      );
      assert.equal(await evm.adapter.getBalance(recipient.address), 5n);
    });

    it('prepares a transfer of more than the sender holds with its fee, so the whole shortfall can be named', async () => {
      // A node estimates no transfer the sender cannot fund (but for a plain one without data, which it
      // answers 21,000 unasked): estimated as if funded (a state override), or, on a node without
      // overrides, as a transfer of nothing; a transfer to a wallet costs the same whatever it moves.
      const refusing = await startOverrideRefusingProxy(evm.anvil.rpcUrl);
      const withoutOverrides = new EvmAdapter({
        info: evm.adapter.info,
        rpcUrl: refusing.url,
        chainId: 31337,
      });
      try {
        const poor = await evm.adapter.generateKeypair();
        await evm.adapter.faucet?.fundNative(poor.address, ETH / 100n);
        const memo = 'pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB';
        const funded = await evm.adapter.prepareTransfer({
          from: evmSender.address,
          to: poor.address,
          amount: 1n,
          memo,
        });
        const fundedGas = parseTransaction(bytesToHex(funded.unsigned)).gas ?? 0n;
        assert.ok(fundedGas > 21_000n, 'the memo costs gas');
        for (const [adapter, from] of [
          [evm.adapter, poor.address],
          [withoutOverrides, poor.address],
          [evm.adapter, (await evm.adapter.generateKeypair()).address],
        ] as const) {
          const prepared = await adapter.prepareTransfer({
            from,
            to: evmSender.address,
            amount: 50n * ETH,
            memo,
          });
          const tx = parseTransaction(bytesToHex(prepared.unsigned));
          assert.equal(tx.gas, fundedGas);
          assert.equal(tx.value, 50n * ETH);
          assert.equal(prepared.fee, fundedGas * (tx.maxFeePerGas ?? 0n));
        }
        assert.ok(refusing.refused() > 0, 'the proxy refused the estimate with an override');

        // Funded, the transfer reverts: the recipient refuses it, not the balance.
        const refuser = privateKeyToAccount(generatePrivateKey()).address;
        const test = createTestClient({ mode: 'anvil', transport: http(evm.anvil.rpcUrl) });
        await test.setCode({ address: refuser, bytecode: '0x60006000fd' }); // REVERT(0, 0), always
        await assert.rejects(
          evm.adapter.prepareTransfer({ from: poor.address, to: refuser, amount: 50n * ETH, memo }),
          isChainError('recipient_refused'),
        );
        // Without an override neither estimate answers: the node's own refusal stands.
        await assert.rejects(
          withoutOverrides.prepareTransfer({ from: poor.address, to: refuser, amount: 50n * ETH, memo }),
          isChainError('insufficient_funds'),
        );
      } finally {
        await withoutOverrides.close();
        await refusing.close();
      }
    });

    it('refuses to sign with a key that is not the sender’s', async () => {
      const other = await evm.adapter.generateKeypair();
      const prepared = await evm.adapter.prepareTransfer({
        from: evmSender.address,
        to: other.address,
        amount: 1n,
      });
      await assert.rejects(evm.adapter.sign(prepared, other.secretKey), isChainError('invalid_transaction'));
    });
  },
);

/**
 * A JSON-RPC proxy to `target` that answers eth_estimateGas with a state override (a third parameter) as a
 * node without override support does (geth before 1.14: too many arguments), and forwards all else.
 */
async function startOverrideRefusingProxy(target: string) {
  let refused = 0;
  const proxy = await startJsonRpcProxy(target, (call) => {
    if (call.method !== 'eth_estimateGas' || (call.params?.length ?? 0) <= 2) return {};
    refused += 1;
    return { answer: { error: { code: -32602, message: 'too many arguments, want at most 2' } } };
  });
  return { ...proxy, refused: () => refused };
}

/** EIP-7623 tokens of an address's bytes: 1 per zero byte, 4 per other byte. */
function calldataTokens(address: string): bigint {
  let tokens = 0n;
  for (let i = 2; i < address.length; i += 2) tokens += address.slice(i, i + 2) === '00' ? 1n : 4n;
  return tokens;
}
