import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
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
import { ChainError } from '../../src/chains/chain-error.ts';
import { EvmAdapter } from '../../src/chains/evm/evm-adapter.ts';
import { decodeTransferNote, encodeTransferNote } from '../../src/chains/evm/transfer-calldata.ts';
import { startTestEvm, type TestEvm } from '../support/test-anvil.ts';

const ETH = 10n ** 18n;
const GWEI = 10n ** 9n;

const isChainError = (kind: ChainError['kind']) => (e: unknown) => e instanceof ChainError && e.kind === kind;

/**
 * A JSON-RPC proxy to `target` that answers eth_estimateGas with a state override (a third parameter) as a
 * node without override support does (geth before 1.14: too many arguments), and forwards all else.
 */
async function startOverrideRefusingProxy(target: string) {
  let refused = 0;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const call = JSON.parse(body) as { id: unknown; method: string; params?: unknown[] };
    res.setHeader('content-type', 'application/json');
    if (call.method === 'eth_estimateGas' && (call.params?.length ?? 0) > 2) {
      refused += 1;
      const error = { code: -32602, message: 'too many arguments, want at most 2' };
      res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error }));
      return;
    }
    const answer = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    res.end(await answer.text());
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refused: () => refused,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('EVM adapter against the embedded anvil', () => {
  let evm: TestEvm;
  let chain: EvmAdapter;
  let client: PublicClient;
  let sender: { address: string; secretKey: Uint8Array };

  before(async () => {
    evm = await startTestEvm();
    chain = evm.adapter;
    client = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
    sender = await chain.generateKeypair();
    await chain.faucet?.fundNative(sender.address, 10n * ETH);
  });
  after(async () => {
    await evm.close();
    evm.dispose();
  });

  /** Prepares, signs, sends and waits; answers the signed transaction and the receipt. */
  async function send(request: Parameters<EvmAdapter['prepareTransfer']>[0], key = sender.secretKey) {
    const prepared = await chain.prepareTransfer(request);
    const signed = await chain.sign(prepared, key);
    assert.equal(await chain.broadcast(signed.wire), signed.signature);
    const outcome = await chain.waitForConfirmation(signed.signature, signed.lastValidBlockHeight, 10_000);
    const receipt = await client.waitForTransactionReceipt({ hash: signed.signature as Hex });
    return { prepared, signed, outcome, receipt };
  }

  it('describes the network and answers ping', async () => {
    await chain.ping();
    assert.equal(chain.info.id, 'eip155:31337');
    assert.equal(chain.info.family, 'evm');
    assert.equal(chain.info.isLocal, true);
    assert.deepEqual(chain.info.nativeCurrency, { symbol: 'ETH', decimals: 18 });
    assert.equal(chain.info.rpcUrl, evm.anvil.rpcUrl);
    assert.ok((await chain.getBlockHeight()) > 0n);
    assert.equal(await chain.blockHeightOf(7n), 7n);
  });

  it('makes 32-byte secp256k1 keys with checksummed addresses', async () => {
    const pair = await chain.generateKeypair();
    assert.equal(pair.secretKey.length, 32);
    assert.match(pair.address, /^0x[0-9a-fA-F]{40}$/);
    assert.notEqual(pair.address, pair.address.toLowerCase(), 'EIP-55 mixed case');
  });

  it('sends ETH with a priority fee, a memo and a reference, exact to the wei', async () => {
    const recipient = await chain.generateKeypair();
    const reference = await chain.generateKeypair();
    const before = await chain.getBalance(sender.address);
    const amount = 1_234_567_890_123_456_789n;
    const { prepared, signed, outcome, receipt } = await send({
      from: sender.address,
      to: recipient.address,
      amount,
      priorityFee: 50_000_000_000_000n,
      memo: 'pay_TEST memo ✓',
      reference: reference.address,
    });
    assert.equal(outcome.status, 'confirmed');
    assert.equal(prepared.feePayer, sender.address);
    const memoBytes = new TextEncoder().encode('pay_TEST memo ✓').length;
    // 21,000 + EIP-7623 floor of 10 gas per calldata token (4 per non-zero byte); the reference is random.
    assert.equal(
      receipt.gasUsed,
      21_000n + 10n * 4n * BigInt(memoBytes) + 10n * calldataTokens(reference.address),
    );
    const tipPerGas = 50_000_000_000_000n / receipt.gasUsed;
    assert.equal(prepared.priorityFee, tipPerGas * receipt.gasUsed);
    const block = await client.getBlock({ blockNumber: receipt.blockNumber });
    assert.equal(
      receipt.effectiveGasPrice,
      (block.baseFeePerGas ?? 0n) + tipPerGas,
      'the tip asked is the tip paid',
    );
    const fee = receipt.gasUsed * receipt.effectiveGasPrice;
    assert.ok(fee <= prepared.fee, 'the prepared fee is the most that can be charged');

    assert.equal(await chain.getBalance(recipient.address), amount);
    assert.equal(await chain.getBalance(sender.address), before - amount - fee);

    const tx = await chain.getTransaction(signed.signature);
    assert.deepEqual(tx, {
      signature: signed.signature,
      slot: receipt.blockNumber,
      blockTime: Number(block.timestamp) * 1000,
      fee,
      error: null,
      feePayer: sender.address,
      nativeTransfers: [{ from: sender.address, to: recipient.address, amount }],
      memos: ['pay_TEST memo ✓'],
      accounts: [sender.address, recipient.address, reference.address],
    });

    const found = await chain.findSignatures(reference.address);
    assert.deepEqual(found, [{ signature: signed.signature, slot: receipt.blockNumber, error: null }]);
    assert.deepEqual(await chain.findSignatures(reference.address.toLowerCase(), { limit: 1 }), found);
    // Told when it was prepared, the scan starts there (that block included, to be safe): it still finds
    // it, and a search for a transaction prepared after its block does not.
    assert.deepEqual(
      await chain.findSignatures(reference.address, { preparedFor: prepared.lastValidBlockHeight }),
      found,
    );
    assert.deepEqual(
      await chain.findSignatures(reference.address, { preparedFor: prepared.lastValidBlockHeight + 2n }),
      [],
      'a transaction prepared after the block it is in cannot be this one',
    );
    assert.deepEqual(await chain.getSignatureStatus(signed.signature), {
      status: 'confirmed',
      slot: receipt.blockNumber,
    });
  });

  it('uses the node’s suggested tip when no priority fee is given', async () => {
    const recipient = await chain.generateKeypair();
    const suggested = BigInt(await client.request({ method: 'eth_maxPriorityFeePerGas' }));
    const latest = await client.getBlock();
    const prepared = await chain.prepareTransfer({ from: sender.address, to: recipient.address, amount: 1n });
    assert.ok(suggested >= GWEI, 'anvil suggests at least 1 gwei');
    assert.equal(prepared.priorityFee, 21_000n * suggested);
    assert.equal(prepared.fee, 21_000n * (2n * (latest.baseFeePerGas ?? 0n) + suggested));
    const signed = await chain.sign(prepared, sender.secretKey);
    await chain.broadcast(signed.wire);
    const receipt = await client.waitForTransactionReceipt({ hash: signed.signature as Hex });
    const block = await client.getBlock({ blockNumber: receipt.blockNumber });
    assert.equal(receipt.gasUsed, 21_000n);
    assert.equal(receipt.effectiveGasPrice, (block.baseFeePerGas ?? 0n) + suggested);
  });

  it('refuses a second broadcast of the same transaction', async () => {
    const recipient = await chain.generateKeypair();
    const { signed } = await send({ from: sender.address, to: recipient.address, amount: ETH });
    await assert.rejects(chain.broadcast(signed.wire), isChainError('already_processed'));
    assert.equal(await chain.getBalance(recipient.address), ETH, 'paid once');
  });

  it('refuses a transaction whose nonce another one used', async () => {
    const recipient = await chain.generateKeypair();
    const first = await chain.prepareTransfer({ from: sender.address, to: recipient.address, amount: 5n });
    const second = await chain.prepareTransfer({ from: sender.address, to: recipient.address, amount: 7n });
    await chain.broadcast((await chain.sign(first, sender.secretKey)).wire);
    await assert.rejects(
      chain.broadcast((await chain.sign(second, sender.secretKey)).wire),
      isChainError('already_processed'),
    );
    assert.equal(await chain.getBalance(recipient.address), 5n);
  });

  it('reports insufficient funds as such and charges nothing', async () => {
    const poor = await chain.generateKeypair();
    await chain.faucet?.fundNative(poor.address, 1_000_000n);
    const prepared = await chain.prepareTransfer({
      from: poor.address,
      to: sender.address,
      amount: 1_000_000n,
    });
    const signed = await chain.sign(prepared, poor.secretKey);
    await assert.rejects(chain.broadcast(signed.wire), isChainError('insufficient_funds'));
    assert.equal(await chain.getBalance(poor.address), 1_000_000n);
  });

  it('prepares a transfer of more than the sender holds with its fee, so the whole shortfall can be named', async () => {
    // A node estimates no transfer the sender cannot fund (but for a plain one without data, which it
    // answers 21,000 unasked): estimated as if funded (a state override), or, on a node without
    // overrides, as a transfer of nothing; a transfer to a wallet costs the same whatever it moves.
    const refusing = await startOverrideRefusingProxy(evm.anvil.rpcUrl);
    const withoutOverrides = new EvmAdapter({ info: chain.info, rpcUrl: refusing.url, chainId: 31337 });
    try {
      const poor = await chain.generateKeypair();
      await chain.faucet?.fundNative(poor.address, ETH / 100n);
      const memo = 'pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB';
      const funded = await chain.prepareTransfer({
        from: sender.address,
        to: poor.address,
        amount: 1n,
        memo,
      });
      const fundedGas = parseTransaction(bytesToHex(funded.unsigned)).gas ?? 0n;
      assert.ok(fundedGas > 21_000n, 'the memo costs gas');
      for (const [adapter, from] of [
        [chain, poor.address],
        [withoutOverrides, poor.address],
        [chain, (await chain.generateKeypair()).address],
      ] as const) {
        const prepared = await adapter.prepareTransfer({ from, to: sender.address, amount: 50n * ETH, memo });
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
        chain.prepareTransfer({ from: poor.address, to: refuser, amount: 50n * ETH, memo }),
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
    const other = await chain.generateKeypair();
    const prepared = await chain.prepareTransfer({ from: sender.address, to: other.address, amount: 1n });
    await assert.rejects(chain.sign(prepared, other.secretKey), isChainError('invalid_transaction'));
  });

  it('reads the USDC-like token and says undefined for an account without code', async () => {
    const owner = await chain.generateKeypair();
    const before = await chain.getTokenInfo(evm.usdc.address);
    await chain.faucet?.fundToken('USDC', owner.address, 2_500_000n);
    const info = await chain.getTokenInfo(evm.usdc.address.toLowerCase());
    assert.deepEqual(info, {
      address: evm.usdc.address,
      decimals: 6,
      supply: (before?.supply ?? 0n) + 2_500_000n,
      name: 'USD Coin',
      symbol: 'USDC',
      mintAuthority: evm.operator,
      freezeAuthority: null,
      program: 'erc20',
    });
    assert.equal(await chain.getTokenInfo(sender.address), undefined);
  });

  it('answers undefined for an unknown transaction and pending when the wait runs out', async () => {
    const unknown = `0x${'ab'.repeat(32)}`;
    assert.equal(await chain.getTransaction(unknown), undefined);
    assert.equal(await chain.getSignatureStatus(unknown), undefined);
    const height = await chain.getBlockHeight();
    assert.deepEqual(await chain.waitForConfirmation(unknown, height + 100n, 200), { status: 'pending' });
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
      // 20 ms polls for a second: ~50 sleeps on the one lifetime signal, past Node's warning at 11.
      const outcome = await chain.waitForConfirmation(`0x${'cd'.repeat(32)}`, height + 1_000n, 1_000);
      assert.deepEqual(outcome, { status: 'pending' });
    }));

  it('waits for many transactions at once without a listener warning (50 concurrent sends wait together)', () =>
    withoutWarnings(async () => {
      const height = await chain.getBlockHeight();
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          chain.waitForConfirmation(`0x${i.toString(16).padStart(64, 'e')}`, height + 1_000n, 300),
        ),
      );
      assert.ok(outcomes.every((o) => o.status === 'pending'));
    }));

  it('reports a transaction that was never sent as expired once its last valid block is past', async () => {
    const prepared = await chain.prepareTransfer({ from: sender.address, to: sender.address, amount: 1n });
    const signed = await chain.sign(prepared, sender.secretKey);
    const height = await chain.getBlockHeight();
    assert.equal(signed.lastValidBlockHeight, height + 150n);
    const test = createTestClient({ mode: 'anvil', transport: http(evm.anvil.rpcUrl) });
    await test.mine({ blocks: 151 });
    assert.deepEqual(await chain.waitForConfirmation(signed.signature, signed.lastValidBlockHeight, 5_000), {
      status: 'expired',
    });
  });

  it('says unavailable, promptly, when the RPC endpoint is down', async () => {
    const down = new EvmAdapter({ info: chain.info, rpcUrl: 'http://127.0.0.1:1', chainId: 31337 });
    const started = Date.now();
    await assert.rejects(down.getBalance(sender.address), isChainError('unavailable'));
    assert.ok(Date.now() - started < 3_000);
    await down.close();
  });
});

describe('transfer calldata', () => {
  const reference = '0x52908400098527886E0F7030069857D2E4169EE7';

  it('round-trips a memo, a reference, and both', () => {
    for (const note of [{ memo: 'hello' }, { reference }, { reference, memo: 'pay_01 ünïcode' }]) {
      const data = encodeTransferNote(note);
      assert.ok(data);
      assert.deepEqual(decodeTransferNote(data), note);
    }
    assert.equal(encodeTransferNote({}), undefined);
  });

  it('finds nothing in calldata that is not gate402 text, such as a contract call', () => {
    // transfer(address,uint256) selector and arguments
    assert.deepEqual(
      decodeTransferNote(`0xa9059cbb${'00'.repeat(12)}${'11'.repeat(20)}${'00'.repeat(31)}01`),
      {},
    );
    assert.deepEqual(decodeTransferNote('0x'), {});
    assert.deepEqual(decodeTransferNote('0x00ff'), {});
  });

  it('refuses a reference that is not an EVM address', () => {
    assert.throws(
      () => encodeTransferNote({ reference: 'not-an-address' }),
      isChainError('invalid_transaction'),
    );
  });
});

/** EIP-7623 tokens of an address's bytes: 1 per zero byte, 4 per other byte. */
function calldataTokens(address: string): bigint {
  let tokens = 0n;
  for (let i = 2; i < address.length; i += 2) tokens += address.slice(i, i + 2) === '00' ? 1n : 4n;
  return tokens;
}
