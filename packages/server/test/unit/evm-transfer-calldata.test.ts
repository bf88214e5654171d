import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeFunctionData, erc20Abi } from 'viem';
import { ChainError } from '../../src/chains/chain-error.ts';
import {
  decodeCalldataNote,
  decodeTransferNote,
  encodeTokenTransferCalldata,
  encodeTransferNote,
} from '../../src/chains/evm/transfer-calldata.ts';

const isChainError = (kind: ChainError['kind']) => (e: unknown) => e instanceof ChainError && e.kind === kind;

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

  it('appends the note to an ERC-20 transfer call, which still decodes as that very call', () => {
    const to = '0x1111111111111111111111111111111111111111';
    for (const note of [{}, { memo: 'pay_01' }, { reference, memo: 'pay_01' }]) {
      const data = encodeTokenTransferCalldata(to, 2_500_000n, note);
      assert.deepEqual(decodeCalldataNote(data), note);
      // A Solidity contract reads its two arguments and ignores the bytes after them.
      const call = decodeFunctionData({ abi: erc20Abi, data });
      assert.equal(call.functionName, 'transfer');
      assert.deepEqual(call.args, [to, 2_500_000n]);
    }
    // A plain transfer's note is read as before; another call's arguments are no note.
    assert.deepEqual(decodeCalldataNote(encodeTransferNote({ reference, memo: 'x' }) ?? '0x'), {
      reference,
      memo: 'x',
    });
    assert.deepEqual(decodeCalldataNote(`0x095ea7b3${'00'.repeat(64)}`), {});
  });

  it('refuses a reference that is not an EVM address', () => {
    assert.throws(
      () => encodeTransferNote({ reference: 'not-an-address' }),
      isChainError('invalid_transaction'),
    );
  });
});
