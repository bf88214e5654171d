// The Memo program under the id @solana-program/memo 0.15 uses by default (x402 clients add their
// memo with it): it runs as the real program — logs the memo, refuses a non-signer account — and is
// still served after a restart from a ledger directory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AccountRole,
  generateKeyPairSigner,
  getSignatureFromTransaction,
  isSolanaError,
  SOLANA_ERROR__INSTRUCTION_ERROR__MISSING_REQUIRED_SIGNATURE,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
} from '@solana/kit';
import { getAddMemoInstruction, MEMO_PROGRAM_ADDRESS } from '@solana-program/memo';
import { mainnetMemoLogs, rustDebugString } from '../src/chain/memo-programs.ts';
import {
  fundedSigner,
  type Harness,
  signedTransfer,
  startHarness,
  tempDir,
  wireBase64,
} from './support/fixture.ts';

test('@solana-program/memo 0.15 targets the id the localnet serves', () => {
  assert.equal(MEMO_PROGRAM_ADDRESS, 'Memo4c2pN8afCj432Lb7RMVKi9PbQnnW7ewFFaV3oAH');
});

async function sendWithMemo(h: Harness, memo: string) {
  const payer = await fundedSigner(h.localnet, 1n);
  const recipient = await generateKeyPairSigner();
  const tx = await signedTransfer(h, payer, recipient.address, 1_000_000n, {
    extra: [getAddMemoInstruction({ memo, signers: [payer] })],
  });
  const signature = await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  assert.equal(signature, getSignatureFromTransaction(tx));
  h.localnet.advanceSlots(1);
  return { payer, recipient, signature };
}

test('a memo to Memo4c2p… lands: logs, memo column and jsonParsed as for the older memo ids', async () => {
  const h = await startHarness();
  try {
    const memo = 'pay_01J9 x402 ✓';
    const { payer, recipient, signature } = await sendWithMemo(h, memo);
    const tx = await h.rpc
      .getTransaction(signature, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
        encoding: 'jsonParsed',
      })
      .send();
    assert.ok(tx, 'the transaction is found');
    assert.equal(tx.meta?.err, null);
    const logs = tx.meta?.logMessages ?? [];
    const byteLength = Buffer.byteLength(memo);
    // The memo program's own log lines as mainnet's Memo program writes them: who signed, then the memo.
    assert.deepEqual(logs.slice(0, 3), [
      `Program ${MEMO_PROGRAM_ADDRESS} invoke [1]`,
      `Program log: Signed by ${payer.address}`,
      `Program log: Memo (len ${byteLength}): "${memo}"`,
    ]);
    assert.ok(logs.includes(`Program ${MEMO_PROGRAM_ADDRESS} success`), logs.join('\n'));
    const [first] = tx.transaction.message.instructions as unknown as { program: string; parsed: unknown }[];
    assert.deepEqual(first, {
      program: 'spl-memo',
      programId: MEMO_PROGRAM_ADDRESS,
      parsed: memo,
      stackHeight: null,
    });
    const found = await h.rpc.getSignaturesForAddress(payer.address, { commitment: 'confirmed' }).send();
    assert.equal(found.find((entry) => entry.signature === signature)?.memo, `[${byteLength}] ${memo}`);
    assert.equal((await h.rpc.getBalance(recipient.address).send()).value, 1_000_000n);
  } finally {
    await h.close();
  }
});

test('the program checks its accounts: a memo naming a non-signer is refused in preflight', async () => {
  const h = await startHarness();
  try {
    const payer = await fundedSigner(h.localnet, 1n);
    const stranger = await generateKeyPairSigner();
    const memo = getAddMemoInstruction({ memo: 'not signed by the stranger' });
    const unsigned = { ...memo, accounts: [{ address: stranger.address, role: AccountRole.READONLY }] };
    const tx = await signedTransfer(h, payer, stranger.address, 1_000_000n, { extra: [unsigned] });
    await assert.rejects(
      h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send(),
      (error: unknown) => {
        assert.ok(
          isSolanaError(error, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE),
          String(error),
        );
        assert.ok(
          isSolanaError(error.cause, SOLANA_ERROR__INSTRUCTION_ERROR__MISSING_REQUIRED_SIGNATURE),
          String(error.cause),
        );
        return true;
      },
    );
  } finally {
    await h.close();
  }
});

test('a restarted localnet still serves Memo4c2p…', async () => {
  const dir = tempDir();
  try {
    const first = await startHarness({ ledgerDir: dir.path });
    await first.close();
    const second = await startHarness({ ledgerDir: dir.path });
    try {
      const { signature } = await sendWithMemo(second, 'after restart');
      const status = await second.rpc.getSignatureStatuses([signature]).send();
      assert.equal(status.value[0]?.err, null);
      assert.equal(status.value[0]?.confirmationStatus, 'confirmed');
    } finally {
      await second.close();
    }
  } finally {
    dir.remove();
  }
});

test('memo logs are written as Rust writes a str: quotes, backslashes and control characters escaped', async () => {
  assert.equal(
    rustDebugString('say "hi"\\ \n\t\u0001 ✓\u200b'),
    '"say \\"hi\\"\\\\ \\n\\t\\u{1} ✓\\u{200b}"',
  );
  assert.deepEqual(
    mainnetMemoLogs([
      'Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr invoke [1]',
      'Program log: Memo (len 3)',
      'Program log: abc',
      'Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr consumed 100 of 200000 compute units',
    ]),
    [
      'Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr invoke [1]',
      'Program log: Memo (len 3): "abc"',
      'Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr consumed 100 of 200000 compute units',
    ],
  );
});
