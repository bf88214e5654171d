// Parts of a landed transaction's meta that the send path derives without asking LiteSVM again:
// return data (known empty when only the System program ran) and the balances of read-only
// accounts (unchanged by rule). Checked against transactions where they do and do not apply.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  address,
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  pipe,
  type Signature,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { getGetAccountDataSizeInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { fundedSigner, type Harness, signedTransfer, startHarness, wireBase64 } from './support/fixture.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

async function landed(signature: Signature) {
  h.localnet.advanceSlots(1);
  const result = await h.rpc
    .getTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
      encoding: 'json',
    })
    .send();
  assert.ok(result?.meta, 'the transaction landed');
  return { meta: result.meta, keys: result.transaction.message.accountKeys };
}

test('a program that sets return data has it in meta.returnData', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  const mint = address(h.localnet.usdcMint.address);
  const { value: lifetime } = await h.rpc.getLatestBlockhash({ commitment: 'processed' }).send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
    (m) => appendTransactionMessageInstructions([getGetAccountDataSizeInstruction({ mint })], m),
  );
  const tx = await signTransactionMessageWithSigners(message);
  const { meta } = await landed(await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send());
  // GetAccountDataSize answers the size of a token account of this mint: 165 bytes, as a u64.
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(165n);
  assert.deepEqual(meta.returnData, {
    programId: TOKEN_PROGRAM_ADDRESS,
    data: [size.toString('base64'), 'base64'],
  });
});

test('a System-only transaction has no return data; read-only accounts keep their balance', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  const recipient = await generateKeyPairSigner();
  const reference = await fundedSigner(h.localnet, 2n);
  const tx = await signedTransfer(h, payer, recipient.address, 1_000_000n, { reference: reference.address });
  const { meta, keys } = await landed(
    await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send(),
  );
  assert.equal(meta.returnData, undefined);
  const balances = (list: readonly bigint[]) => Object.fromEntries(keys.map((key, i) => [key, list[i]]));
  assert.deepEqual(balances(meta.preBalances), {
    [payer.address]: 1_000_000_000n,
    [recipient.address]: 0n,
    [reference.address]: 2_000_000_000n,
    '11111111111111111111111111111111': 1n,
  });
  assert.deepEqual(balances(meta.postBalances), {
    [payer.address]: 1_000_000_000n - 5000n - 1_000_000n,
    [recipient.address]: 1_000_000n,
    [reference.address]: 2_000_000_000n,
    '11111111111111111111111111111111': 1n,
  });
});
