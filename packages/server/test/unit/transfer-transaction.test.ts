import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  type Address,
  type Blockhash,
  getBase58Decoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
} from '@solana/kit';
import { compileTransfer, MEMO_PROGRAM } from '../../src/chains/solana/solana-adapter.ts';
import { generateSolanaKeypair, signWithSecretKey } from '../../src/chains/solana/solana-keypair.ts';
import {
  encodeTransferTransaction,
  singleSignerMessage,
} from '../../src/chains/solana/transfer-transaction.ts';
import { decodeBase58, encodeBase58 } from '../../src/domain/base58.ts';

const COMPUTE_UNIT_LIMIT = 20_000;
const base58 = getBase58Decoder();

function keyText(): string {
  return generateSolanaKeypair().address;
}

describe('the hand-encoded SOL transfer', () => {
  const variants = [
    { name: 'memo and price', memo: 'pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB', price: 1_000n, reference: false },
    { name: 'no price', memo: 'pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB', price: 0n, reference: false },
    { name: 'no memo', memo: undefined, price: 50n, reference: false },
    { name: 'a reference key', memo: 'pay_x', price: 7n, reference: true },
    { name: 'a non-ASCII memo', memo: 'paiement déjà reçu ✓', price: 1n, reference: true },
  ];
  for (const variant of variants) {
    test(`is byte for byte what @solana/kit compiles: ${variant.name}`, () => {
      // Many random keys, so the read-only keys land in every order kit can give them.
      for (let i = 0; i < 40; i++) {
        const from = keyText();
        const to = keyText();
        const reference = variant.reference ? keyText() : undefined;
        const blockhash = base58.decode(randomBytes(32)) as Blockhash;
        const lamports = BigInt(1 + i) * 1_000_003n;
        const ours = encodeTransferTransaction({
          from,
          to,
          reference,
          lamports,
          blockhash,
          computeUnitLimit: COMPUTE_UNIT_LIMIT,
          computeUnitPrice: variant.price,
          memo: variant.memo,
          memoProgram: MEMO_PROGRAM,
        });
        const kits = compileTransfer(
          from as Address,
          to as Address,
          { amount: lamports, reference, memo: variant.memo },
          { blockhash, lastValidBlockHeight: 1n },
          variant.price,
        );
        assert.equal(Buffer.from(ours ?? []).toString('hex'), Buffer.from(kits).toString('hex'));
      }
    });
  }

  test('leaves to kit what it does not cover: one key in two roles, or a key that is not one', () => {
    const from = keyText();
    const shape = {
      from,
      to: keyText(),
      lamports: 1n,
      blockhash: base58.decode(randomBytes(32)),
      computeUnitLimit: COMPUTE_UNIT_LIMIT,
      computeUnitPrice: 1n,
      memoProgram: MEMO_PROGRAM,
    };
    assert.equal(encodeTransferTransaction({ ...shape, reference: from }), undefined);
    assert.equal(encodeTransferTransaction({ ...shape, to: '11111111111111111111111111111111' }), undefined);
    assert.equal(encodeTransferTransaction({ ...shape, to: 'not-base58!' }), undefined);
    assert.equal(
      encodeTransferTransaction({ ...shape, blockhash: base58.decode(randomBytes(31)) }),
      undefined,
    );
  });

  test('is signed in its one slot with the signature kit computes, and named by it', () => {
    const payer = generateSolanaKeypair();
    const wire = encodeTransferTransaction({
      from: payer.address,
      to: keyText(),
      lamports: 5_000n,
      blockhash: base58.decode(randomBytes(32)),
      computeUnitLimit: COMPUTE_UNIT_LIMIT,
      computeUnitPrice: 3n,
      memo: 'pay_1',
      memoProgram: MEMO_PROGRAM,
    });
    assert.ok(wire);
    const single = singleSignerMessage(wire);
    assert.ok(single);
    assert.equal(encodeBase58(single.signer), payer.address);
    const decoded = getTransactionDecoder().decode(wire);
    assert.deepEqual(single.message, new Uint8Array(decoded.messageBytes));

    const signed = new Uint8Array(wire);
    const signature = signWithSecretKey(payer.secretKey, single.message);
    signed.set(signature, 1);
    const kitView = getTransactionDecoder().decode(signed);
    assert.equal(encodeBase58(signature), getSignatureFromTransaction(kitView));
  });

  test('singleSignerMessage refuses a transaction with another number of signers', () => {
    const twoSigners = new Uint8Array(1 + 128 + 40);
    twoSigners[0] = 2;
    assert.equal(singleSignerMessage(twoSigners), undefined);
    const headerSaysTwo = new Uint8Array(1 + 64 + 40);
    headerSaysTwo[0] = 1;
    headerSaysTwo[65] = 0x80;
    headerSaysTwo[66] = 2;
    assert.equal(singleSignerMessage(headerSaysTwo), undefined);
  });
});

describe('base58', () => {
  test('encodes as kit does, leading zero bytes included, and decodes back', () => {
    for (const length of [0, 1, 31, 32, 64]) {
      for (let i = 0; i < 50; i++) {
        const bytes = new Uint8Array(randomBytes(length));
        if (i % 5 === 0 && length > 2) bytes.fill(0, 0, 2);
        const text = encodeBase58(bytes);
        assert.equal(text, base58.decode(bytes));
        assert.deepEqual(decodeBase58(text), bytes);
      }
    }
    for (const notBase58 of ['0', 'O', 'I', 'l', 'abc+', 'é'])
      assert.equal(decodeBase58(notBase58), undefined);
  });
});
